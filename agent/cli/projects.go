package cli

import (
	"fmt"
	"net/http"
	"net/url"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

var projectCols = output.Cols("ID=id", "NAME=name", "OWNER=owner_id", "CREATED=created_at")

func projectsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "projects",
		Aliases: []string{"project"},
		Short:   "Create and list projects (a project holds containers and the people who may act on them)",
		GroupID: GroupControl,
	}
	create := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create a project you own",
		Example: "  deckhand projects create demo\n  project=$(deckhand projects create demo -o json | jq -r .id)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(cmd, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/projects", Body: map[string]any{"name": args[0]}},
				objectTable(projectCols))
		},
	}
	list := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "Projects you own or are permitted on, oldest first",
		Args:    cobra.NoArgs,
	}
	page := addPageFlags(list)
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return show(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/projects", Query: page()}, listTable("projects", projectCols))
	}
	cmd.AddCommand(create, list)
	return cmd
}

// addPageFlags declares --page and --limit of a list the control plane
// pages; the query it returns asks for the page they name.
func addPageFlags(cmd *cobra.Command) func() url.Values {
	page := cmd.Flags().Int("page", 1, "page, from 1")
	limit := cmd.Flags().Int("limit", 20, "page size, 1-100")
	return func() url.Values {
		return url.Values{"page": {fmt.Sprint(*page)}, "limit": {fmt.Sprint(*limit)}}
	}
}
