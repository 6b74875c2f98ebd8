package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

var containerCols = output.Cols("ID=id", "NAME=name", "PROJECT=project_id", "IMAGE=image_id", "STATUS=status", "REASON=status_reason",
	"RUNTIME=runtime", "AGENT=agent_addr", "CREATED=created_at")

var containerListCols = output.Cols("ID=id", "NAME=name", "STATUS=status", "IMAGE=image_id", "AGENT=agent_addr", "CREATED=created_at")

func containersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "containers",
		Aliases: []string{"container"},
		Short:   "Create, list, start, stop, restart and delete containers that run",
		Long: "Containers run on the control plane's engine with the deckhand agent as their entrypoint. A new container is " +
			"`creating` until its agent has enrolled and answers, then `running`; `failed` says why in REASON.",
		GroupID: GroupControl,
	}
	cmd.AddCommand(containerCreateCmd(), containerListCmd(), containerGetCmd(),
		containerActionCmd("start", "Start a stopped or failed container (waits until its agent answers)"),
		containerActionCmd("stop", "Stop a container (its workspace stays)"),
		containerActionCmd("restart", "Restart a container (waits until its agent answers again)"),
		containerRemoveCmd(), containerTokenCmd())
	cmd.AddCommand(containerStateCmds()...)
	return cmd
}

func containerTokenCmd() *cobra.Command {
	var (
		services []string
		ttl      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "token ID",
		Short: "Print a short-lived token that opens the container's agent to you",
		Long: "Asks the control plane for an access token to the container's agent (project owner, manager or operator; an admin " +
			"for any container). The agent's gateway admits it as `Authorization: Bearer TOKEN` (or the deckhand_token cookie), " +
			"directly at the agent's address or through the platform proxy's service URLs, until it expires. With --for it opens " +
			"only the services named (a token for mcp also reaches what the mcp tools call). The agent commands (exec, ls, cp, " +
			"tunnel, ...) with --container get one by themselves; this is for other clients: curl, an MCP client, a browser.",
		Example: "  deckhand containers token c0123 --ttl 10m\n" +
			"  TOKEN=$(deckhand containers token c0123 --for mcp -o json | jq -r .token)\n" +
			"  curl -H \"Authorization: Bearer $TOKEN\" \"$(deckhand containers get c0123 -o json | jq -r .urls.mcp)/mcp\"",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl%time.Second != 0 || ttl < time.Minute || ttl > MaxAccessTTL {
				return fmt.Errorf("--ttl %s: must be whole seconds from 1m to 24h", ttl)
			}
			resp, _, err := MintAccess(cmd, args[0], services, ttl)
			if err != nil {
				return err
			}
			return printData(cmd, resp.Data, objectTable(accessTokenCols))
		},
	}
	cmd.Flags().StringSliceVar(&services, "for", nil, "only these services of the agent (comma list or repeated: mcp, process, files, terminal, ...; default all)")
	cmd.Flags().DurationVar(&ttl, "ttl", AccessTTL, "how long the token lasts, 1m-24h")
	return cmd
}

var accessTokenCols = output.Cols("TOKEN=token", "CONTAINER=container_id", "SERVICES=services", "EXPIRES=expires_at", "AGENT=agent_url")

// containerTable draws a container and the URLs of its main services.
func containerTable(t *output.TableWriter, d any) {
	t.Object(d, containerCols)
	if urls, ok := output.Field(d, "urls").(map[string]any); ok {
		for _, svc := range []string{"terminal", "files", "process"} {
			if u, ok := urls[svc].(string); ok {
				t.Row("URL "+strings.ToUpper(svc), u)
			}
		}
	}
}

func containerCreateCmd() *cobra.Command {
	var (
		project, image string
		cpus           float64
		memory         int64
		autostart      bool
		env            []string
		wait           time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a container in a project from a catalog image",
		Long: "Creates a container (project owner or manager). It answers at once in `creating`; with --wait it polls until the " +
			"container is running (or failed, which exits non-zero with the reason).",
		Example: "  deckhand containers create box --project p1 --image deckhand/base --wait 2m\n" +
			"  deckhand containers create box --project p1 --image img_0123456789abcdef01234567 --wait 60s\n" +
			"  deckhand containers create box --project p1 --image img_... --cpus 1 --memory-mb 1024 --env LANG=C.UTF-8 -o json",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			imageID, err := resolveImage(cmd, c, image)
			if err != nil {
				return err
			}
			body := map[string]any{"project_id": project, "name": args[0], "image_id": imageID}
			if cpus != 0 || memory != 0 {
				res := map[string]any{}
				if cpus != 0 {
					res["cpus"] = cpus
				}
				if memory != 0 {
					res["memory_mb"] = memory
				}
				body["resources"] = res
			}
			if autostart {
				body["autostart"] = true
			}
			if len(env) > 0 {
				vars := map[string]string{}
				for _, kv := range env {
					k, v, ok := strings.Cut(kv, "=")
					if !ok {
						return fmt.Errorf("--env %q: want NAME=VALUE", kv)
					}
					vars[k] = v
				}
				body["env"] = vars
			}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/containers", Body: body})
			if err != nil {
				return err
			}
			if wait > 0 {
				d, err := output.Decode(resp.Data)
				if err != nil {
					return err
				}
				id, _ := output.Field(d, "id").(string)
				if resp, err = waitRunning(cmd, c, id, wait); err != nil {
					return err
				}
			}
			return printData(cmd, resp.Data, containerTable)
		},
	}
	f := cmd.Flags()
	f.StringVar(&project, "project", "", "the project's id (required)")
	f.StringVar(&image, "image", "", "the catalog image: its id (img_...), or its alias or engine name (deckhand/base:VERSION; "+
		"without a tag, the newest entry of that name), required; the catalog: GET /api/v1/images/public")
	f.Float64Var(&cpus, "cpus", 0, "CPU cores, 0.1-64 (default: the engine's)")
	f.Int64Var(&memory, "memory-mb", 0, "memory limit in MiB, 128-262144 (default: the engine's)")
	f.BoolVar(&autostart, "autostart", false, "start again with the engine")
	f.StringArrayVar(&env, "env", nil, "NAME=VALUE for the container's programs (repeatable)")
	f.DurationVar(&wait, "wait", 0, "wait this long for running (0: answer at once)")
	_ = cmd.MarkFlagRequired("project")
	_ = cmd.MarkFlagRequired("image")
	return cmd
}

// waitRunning polls container id until it is running, failed, or wait
// passes.
func waitRunning(cmd *cobra.Command, c *control, id string, wait time.Duration) (*deckhand.Answer, error) {
	deadline := time.Now().Add(wait)
	for {
		resp, err := c.call(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/containers/" + url.PathEscape(id)})
		if err != nil {
			return nil, err
		}
		d, err := output.Decode(resp.Data)
		if err != nil {
			return nil, err
		}
		switch output.Field(d, "status") {
		case "running":
			return resp, nil
		case "failed":
			return nil, fmt.Errorf("container %s failed: %v", id, output.Field(d, "status_reason"))
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("container %s is still %v after %s", id, output.Field(d, "status"), wait)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func containerListCmd() *cobra.Command {
	var project string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List a project's containers, oldest first",
		Args:    cobra.NoArgs,
	}
	page := addPageFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		path := "/api/v1/projects/" + url.PathEscape(project) + "/containers"
		return show(cmd, deckhand.Request{Method: http.MethodGet, Path: path, Query: page()}, listTable("containers", containerListCols))
	}
	cmd.Flags().StringVar(&project, "project", "", "the project's id (required)")
	_ = cmd.MarkFlagRequired("project")
	return cmd
}

func containerGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show one container: status, reason, agent address and service URLs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/containers/" + url.PathEscape(args[0])}, containerTable)
		},
	}
}

func containerActionCmd(action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/api/v1/containers/" + url.PathEscape(args[0]) + "/" + action
			return show(cmd, deckhand.Request{Method: http.MethodPost, Path: path}, containerTable)
		},
	}
}

func containerRemoveCmd() *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"delete"},
		Short:   "Delete a container: its engine container, its workspace volume and its record",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/api/v1/containers/" + url.PathEscape(args[0])
			if keep {
				path += "?keep_workspace=true"
			}
			return remove(cmd, path, args[0], "deleted")
		},
	}
	cmd.Flags().BoolVar(&keep, "keep-workspace", false, "keep the workspace volume in the engine")
	return cmd
}

// resolveImage is the catalog id of image: an img_ id as it is, else the
// public catalog's entry whose alias or engine name (image_name) is image,
// or, for a name without a tag, the newest whose name is image:<tag>.
func resolveImage(cmd *cobra.Command, c *control, image string) (string, error) {
	if strings.HasPrefix(image, "img_") {
		return image, nil
	}
	q := url.Values{"search": {image}, "sort_by": {"added_date"}, "sort_order": {"desc"}, "limit": {"100"}}
	resp, err := c.call(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/images/public?" + q.Encode()})
	if err != nil {
		return "", err
	}
	d, err := output.Decode(resp.Data)
	if err != nil {
		return "", err
	}
	list, _ := output.Field(d, "images").([]any)
	tagless := ""
	for _, it := range list {
		id, _ := output.Field(it, "id").(string)
		for _, k := range []string{"alias", "image_name"} {
			name, _ := output.Field(it, k).(string)
			if name == image {
				return id, nil
			}
			if tagless == "" && !strings.Contains(image[strings.LastIndex(image, "/")+1:], ":") && strings.HasPrefix(name, image+":") {
				tagless = id
			}
		}
	}
	if tagless != "" {
		return tagless, nil
	}
	return "", fmt.Errorf("--image %s: no catalog image has that id, alias or engine name (deckhand images are registered "+
		"by the control plane from make image)", image)
}
