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
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/projects", Body: map[string]any{"name": args[0]}})
			if err != nil {
				return err
			}
			return printData(cmd, resp, func(t *output.TableWriter, d any) error {
				t.Object(d, projectCols)
				return nil
			})
		},
	}
	var page, limit int
	list := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "Projects you own or are permitted on, oldest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			q := url.Values{"page": {fmt.Sprint(page)}, "limit": {fmt.Sprint(limit)}}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/projects?" + q.Encode()})
			if err != nil {
				return err
			}
			return printData(cmd, resp, func(t *output.TableWriter, d any) error {
				t.Objects(output.Field(d, "projects"), projectCols)
				return nil
			})
		},
	}
	list.Flags().IntVar(&page, "page", 1, "page, from 1")
	list.Flags().IntVar(&limit, "limit", 20, "page size, 1-100")
	cmd.AddCommand(create, list)
	return cmd
}
