package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

var previewCols = output.Cols("URL=url", "PORT=port", "CONTAINER=container_id", "EXPIRES=expires_at")

// previewCmd prints a signed link to a port preview of a container: the
// web app on that port at the root of its own host, through the platform
// proxy, open to whoever holds the link until it expires.
func previewCmd() *cobra.Command {
	var (
		container string
		ttl       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "preview PORT --container ID",
		Short: "Print a signed link to a web app listening on PORT in a container",
		Long: "Signs a link to the port preview <project>-<container>-p<PORT>-1.<server>.<domain> through the control plane's platform " +
			"proxy (project owner or manager). The link opens that port, and nothing else, to whoever holds it until it expires, " +
			"without a credential of the container's proxy permissions; the first visit moves its token into a cookie for that " +
			"host. A preview for everyone with no link is a permission rule instead (docs/using/urls.md).",
		Example: "  deckhand preview 3000 --container c1\n  deckhand preview 8080 --container c1 --ttl 24h -o json",
		GroupID: GroupControl,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			port, err := strconv.Atoi(args[0])
			if err != nil || port < 1 || port > 65535 {
				return fmt.Errorf("PORT: must be a TCP port 1-65535, got %q", args[0])
			}
			if container == "" {
				return fmt.Errorf("--container: the container's id is required (deckhand containers ls)")
			}
			body := map[string]any{"port": port}
			if ttl != 0 {
				body["ttl_seconds"] = int(ttl / time.Second)
			}
			path := "/api/v1/containers/" + url.PathEscape(container) + "/previews"
			return show(cmd, deckhand.Request{Method: http.MethodPost, Path: path, Body: body}, objectTable(previewCols))
		},
	}
	cmd.Flags().StringVar(&container, "container", "", "the container's id")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long the link opens the port: 1m-168h (default 1h)")
	return cmd
}
