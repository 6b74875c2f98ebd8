package cli

import (
	"net/http"
	"net/url"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

var snapshotCols = output.Cols("ID=id", "NAME=name", "CONTAINER=container_id", "SIZE=size_bytes", "CREATED=created_at")

// containerStateCmds are the commands that keep or bring back a
// container's state: pause and resume, snapshots, forks and workspaces.
func containerStateCmds() []*cobra.Command {
	return []*cobra.Command{
		containerActionCmd("pause", "Pause a running container: its processes freeze, memory and output offsets stay"),
		containerActionCmd("resume", "Resume a paused container (waits until its agent answers again)"),
		snapshotCreateCmd(), snapshotListCmd(), snapshotRestoreCmd(), snapshotRemoveCmd(), forkCmd(), workspacesCmd(),
	}
}

func snapshotsPath(id string) string {
	return "/api/v1/containers/" + url.PathEscape(id) + "/snapshots"
}

func snapshotCreateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot ID NAME",
		Short: "Snapshot a container: its files, installed packages and workspace (not memory)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(cmd, deckhand.Request{Method: http.MethodPost, Path: snapshotsPath(args[0]), Body: map[string]any{"name": args[1]}},
				objectTable(snapshotCols))
		},
	}
}

func snapshotListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "snapshots ID",
		Short: "List a container's snapshots, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(cmd, deckhand.Request{Method: http.MethodGet, Path: snapshotsPath(args[0])}, listTable("snapshots", snapshotCols))
		},
	}
}

func snapshotRestoreCmd() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "restore ID SNAPSHOT_ID",
		Short: "Put a container back to a snapshot (what changed since is lost)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPost, Path: snapshotsPath(args[0]) + "/" + url.PathEscape(args[1]) + "/restore"})
			if err != nil {
				return err
			}
			if wait > 0 {
				if resp, err = waitRunning(cmd, c, args[0], wait); err != nil {
					return err
				}
			}
			return printData(cmd, resp.Data, containerTable)
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait this long for running (0: answer at once, in creating)")
	return cmd
}

func snapshotRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot-rm ID SNAPSHOT_ID",
		Short: "Delete a snapshot (its image stays while containers run from it)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return remove(cmd, snapshotsPath(args[0])+"/"+url.PathEscape(args[1]), args[1], "deleted")
		},
	}
}

func forkCmd() *cobra.Command {
	var (
		project, snapshot string
		count             int
		wait              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "fork NAME",
		Short: "Create containers from a snapshot: its files, packages and workspace, each with its own identity",
		Long: "Creates --count containers (1-10) named NAME-1 ... NAME-<count> from the snapshot, in the snapshot's project. " +
			"With --wait it waits until all are running.",
		Example: "  deckhand containers fork try --project p1 --snapshot s1 --count 3 --wait 60s",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			body := map[string]any{"project_id": project, "name": args[0], "snapshot_id": snapshot, "count": count}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/containers", Body: body})
			if err != nil {
				return err
			}
			d, err := output.Decode(resp.Data)
			if err != nil {
				return err
			}
			list, _ := d.([]any)
			if wait > 0 {
				deadline := time.Now().Add(wait)
				for i, x := range list {
					id, _ := output.Field(x, "id").(string)
					r, err := waitRunning(cmd, c, id, time.Until(deadline))
					if err != nil {
						return err
					}
					if list[i], err = output.Decode(r.Data); err != nil {
						return err
					}
				}
			}
			return output.New(cmd).Print(list, func(t *output.TableWriter) { t.Objects(list, containerListCols) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&project, "project", "", "the project's id (required; the snapshot's)")
	f.StringVar(&snapshot, "snapshot", "", "the snapshot's id (required)")
	f.IntVar(&count, "count", 1, "how many, 1-10")
	f.DurationVar(&wait, "wait", 0, "wait this long for all to run (0: answer at once)")
	_ = cmd.MarkFlagRequired("project")
	_ = cmd.MarkFlagRequired("snapshot")
	return cmd
}

var workspaceCols = output.Cols("ID=id", "NAME=name", "CONTAINER=container_id", "CREATED=created_at")

func workspacesCmd() *cobra.Command {
	var project string
	var rm string
	cmd := &cobra.Command{
		Use:   "workspaces",
		Short: "List a project's kept workspaces (rm --keep-workspace), or delete one with --rm ID",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := "/api/v1/projects/" + url.PathEscape(project) + "/workspaces"
			if rm != "" {
				return remove(cmd, path+"/"+url.PathEscape(rm), rm, "deleted")
			}
			return show(cmd, deckhand.Request{Method: http.MethodGet, Path: path}, listTable("workspaces", workspaceCols))
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "the project's id (required)")
	cmd.Flags().StringVar(&rm, "rm", "", "delete this workspace and its volume")
	_ = cmd.MarkFlagRequired("project")
	return cmd
}
