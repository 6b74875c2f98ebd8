package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

// remotePath reads a container path argument. Commands that act only in
// the container (ls, rm, mkdir) take it with or without the leading colon;
// cp needs the colon to tell the direction. A relative path is taken from
// the files root.
func remotePath(arg string, needColon bool) (string, bool) {
	p, ok := strings.CutPrefix(arg, ":")
	if !ok && needColon {
		return "", false
	}
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p, true
}

var entryCols = output.Cols("PERMISSIONS=permissions", "OWNER=owner", "GROUP=group", "SIZE=size", "MODIFIED=modified", "NAME=name")

func lsCmd() *cobra.Command {
	var (
		hidden bool
		depth  int
	)
	cmd := &cobra.Command{
		Use:   "ls [:PATH]",
		Short: "List a directory in the container (default :/)",
		Long: "Lists a directory through the files service (a file: that one entry). Links are listed, not followed.\n" +
			"-o json prints the service's listing ({path, entries[], truncated}).",
		Example: "  deckhand ls :/tmp\n  deckhand ls -a :/root -o json | jq -r '.entries[].name'",
		Args:    cobra.MaximumNArgs(1),
	}
	ag := AddAgentFlags(cmd)
	cmd.Flags().BoolVarP(&hidden, "all", "a", false, "include names starting with a dot")
	cmd.Flags().IntVar(&depth, "depth", 1, "levels to descend (1-32)")
	cmd.RunE = ag.runE(func(ctx context.Context, cmd *cobra.Command, args []string, box *deckhand.Container) error {
		p := "/"
		if len(args) == 1 {
			p, _ = remotePath(args[0], false)
		}
		// The service's own answers, which -o json prints as they are.
		var one, raw json.RawMessage
		if err := box.Call(ctx, http.MethodGet, "files", "/api/v1/files/stat", url.Values{"path": {p}}, nil, &one); err != nil {
			return ag.explain(err)
		}
		if d, _ := output.Decode(one); output.Field(d, "type") == "dir" {
			q := url.Values{"path": {p}, "depth": {fmt.Sprint(depth)}, "hidden": {fmt.Sprint(hidden)}}
			if err := box.Call(ctx, http.MethodGet, "files", "/api/v1/files", q, nil, &raw); err != nil {
				return ag.explain(err)
			}
		} else {
			raw, _ = json.Marshal(map[string]any{"path": p, "entries": []json.RawMessage{one}, "truncated": false})
		}
		return printData(cmd, raw, func(t *output.TableWriter, d any) {
			cols := entryCols
			if depth > 1 {
				cols = append(cols[:len(cols)-1:len(cols)-1], output.Column{Header: "PATH", Field: "path"})
			}
			t.Objects(output.Field(d, "entries"), cols)
			if output.Field(d, "truncated") == true {
				t.Line("(truncated: more entries than the service lists at once)")
			}
		})
	})
	return cmd
}

func cpCmd() *cobra.Command {
	var o copyOptions
	cmd := &cobra.Command{
		Use:   "cp SOURCE DEST",
		Short: "Copy a file to or from the container (:PATH is in the container)",
		Long: "Copies one file. The side written :PATH is in the container, as scp writes host:path; a destination\n" +
			"that is a directory (or ends in /) gets the source's name. Both ways are checked end to end with SHA-256\n" +
			"and resumable: a dropped connection is resumed at once, and a copy that stops (Ctrl-C, a crash) continues\n" +
			"from where it was when the same command is run again. A progress bar shows on a terminal, none in a pipe.\n" +
			"With both sides :PATH the file is copied inside the container.",
		Example: "  deckhand cp ./a.bin :/tmp/a.bin\n  deckhand cp :/tmp/a.bin ./b.bin\n  deckhand cp ./a.bin :/tmp/ -o json | jq .sha256",
		Args:    cobra.ExactArgs(2),
	}
	ag := AddAgentFlags(cmd)
	cmd.Flags().BoolVarP(&o.NoClobber, "no-clobber", "n", false, "do not replace an existing destination")
	cmd.Flags().IntVar(&o.Retries, "retries", 5, "dropped connections in a row to resume from before giving up")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		src, srcRemote := remotePath(args[0], true)
		dst, dstRemote := remotePath(args[1], true)
		if !srcRemote && !dstRemote {
			return errors.New("neither side is in the container: write the container's side as :PATH (cp ./a :/tmp/a)")
		}
		box, err := ag.Client()
		if err != nil {
			return err
		}
		ctx, stop := Context(cmd)
		defer stop()
		if path, err := ConfigPath(); err == nil {
			o.Resumes = &resumes{Path: StatePath(path)}
		}
		o.Progress = progress()
		var res any
		switch {
		case srcRemote && dstRemote:
			if dst, err = target(ctx, box, dst, path.Base(src)); err != nil {
				return ag.explain(err)
			}
			var e json.RawMessage
			body := map[string]any{"from": src, "to": dst, "overwrite": !o.NoClobber}
			if err := box.Call(ctx, http.MethodPost, "files", "/api/v1/files/copy", nil, body, &e); err != nil {
				return ag.explain(err)
			}
			res = e
		case dstRemote:
			r, err := upload(ctx, box, ag.base, args[0], dst, o)
			if err != nil {
				return ag.explain(err)
			}
			res = r
		default:
			r, err := download(ctx, box, ag.base, src, args[1], o)
			if err != nil {
				return ag.explain(err)
			}
			res = r
		}
		return output.New(cmd).Print(res, func(t *output.TableWriter) {
			if r, ok := res.(*copyResult); ok {
				resumed := ""
				if r.ResumedFrom > 0 {
					resumed = fmt.Sprintf(", resumed at byte %d", r.ResumedFrom)
				}
				t.Line("%s -> %s: %d bytes, sha256 %s%s", r.Source, r.Destination, r.Size, r.SHA256, resumed)
				return
			}
			t.Line("%s -> %s", args[0], args[1])
		})
	}
	return cmd
}

func rmCmd() *cobra.Command {
	var recursive, force bool
	cmd := &cobra.Command{
		Use:     "rm :PATH...",
		Short:   "Delete files or directories in the container",
		Long:    "Deletes each path (a link itself, never its target). A directory needs -r unless it is empty.",
		Example: "  deckhand rm :/tmp/a.bin\n  deckhand rm -r :/tmp/build",
		Args:    cobra.MinimumNArgs(1),
	}
	ag := AddAgentFlags(cmd)
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "delete directories with everything in them")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "a path that does not exist is not an error")
	cmd.RunE = ag.runE(func(ctx context.Context, cmd *cobra.Command, args []string, box *deckhand.Container) error {
		type removed struct {
			Path    string `json:"path"`
			Removed bool   `json:"removed"`
		}
		var out []removed
		for _, a := range args {
			p, _ := remotePath(a, false)
			if p == "/" {
				return errors.New("refusing to delete the files root")
			}
			err := box.Files.Remove(ctx, p, recursive)
			if err != nil && !(force && deckhand.IsNotFound(err)) {
				return ag.explain(err) // the service's message names the path
			}
			out = append(out, removed{Path: p, Removed: err == nil})
		}
		return output.New(cmd).Print(out, func(t *output.TableWriter) {
			for _, r := range out {
				if r.Removed {
					t.Line("removed :%s", r.Path)
				}
			}
		})
	})
	return cmd
}

func mkdirCmd() *cobra.Command {
	var mode string
	var noParents bool
	cmd := &cobra.Command{
		Use:     "mkdir :PATH...",
		Short:   "Create directories in the container (with their parents, like mkdir -p)",
		Example: "  deckhand mkdir :/srv/app/data",
		Args:    cobra.MinimumNArgs(1),
	}
	ag := AddAgentFlags(cmd)
	cmd.Flags().StringVarP(&mode, "mode", "m", "", "octal permission bits (default 0755, before the umask)")
	cmd.Flags().BoolVar(&noParents, "no-parents", false, "fail when a parent is missing or the directory exists")
	cmd.RunE = ag.runE(func(ctx context.Context, cmd *cobra.Command, args []string, box *deckhand.Container) error {
		var made []json.RawMessage
		for _, a := range args {
			p, _ := remotePath(a, false)
			body := map[string]any{"path": p, "parents": !noParents}
			if mode != "" {
				body["mode"] = mode
			}
			var e json.RawMessage
			if err := box.Call(ctx, http.MethodPost, "files", "/api/v1/files/mkdir", nil, body, &e); err != nil {
				return ag.explain(err)
			}
			made = append(made, e)
		}
		raw, _ := json.Marshal(made)
		return printData(cmd, raw, func(t *output.TableWriter, d any) {
			for _, e := range asList(d) {
				t.Line("made :%s", path.Clean(output.Cell(output.Field(e, "path"))))
			}
		})
	})
	return cmd
}
