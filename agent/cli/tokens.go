package cli

import (
	"net/http"
	"net/url"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

var tokenCols = output.Cols("ID=id", "ALIAS=alias", "ENABLED=is_enabled", "EXPIRES=expires_at", "IP ALLOW-LIST=ip_whitelist",
	"LAST USED=last_used_at", "LAST IP=last_used_ip", "CREATED=created_at")

func tokensCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tokens",
		Short:   "Manage auth tokens (svc_...) for automation",
		GroupID: GroupControl,
	}
	cmd.AddCommand(tokenCreateCmd(), tokenListCmd(), tokenGetCmd(),
		tokenPatchCmd("enable", "Enable an auth token", true),
		tokenPatchCmd("disable", "Disable an auth token (it stops working until enabled)", false),
		tokenRevokeCmd())
	return cmd
}

func tokenPath(id string) string { return "/api/v1/auth/tokens/" + url.PathEscape(id) }

// codeHeader carries a two-factor code for the token gate.
func codeHeader(code string) http.Header {
	if code == "" {
		return nil
	}
	return http.Header{"X-2fa-Code": {code}}
}

func tokenCreateCmd() *cobra.Command {
	var (
		ips           []string
		expires, code string
	)
	cmd := &cobra.Command{
		Use:   "create ALIAS",
		Short: "Create an auth token; its secret is printed once",
		Long: "Creates an auth token. The secret (svc_...) is in this answer only: store it now.\n" +
			"--expires-at takes an ISO 8601 time, Unix seconds, `today` (midnight UTC tonight) or `tomorrow` (in 24 hours).\n" +
			"With the two-factor token gate on, give a current code with --totp-code.",
		Example: "  deckhand tokens create ci --ip 203.0.113.7 --expires-at tomorrow\n  deckhand tokens create ci -o json | jq -r .token",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"alias": args[0]}
			if len(ips) > 0 {
				body["ip_whitelist"] = ips
			}
			if expires != "" {
				body["expires_at"] = expires
			}
			r := deckhand.Request{Method: http.MethodPost, Path: "/api/v1/auth/tokens", Body: body, Header: codeHeader(code)}
			return show(cmd, r, func(t *output.TableWriter, d any) {
				t.Object(d, append(output.Cols("TOKEN=token"), tokenCols...))
				t.Line("The token is shown only now: store it.")
			})
		},
	}
	cmd.Flags().StringSliceVar(&ips, "ip", nil, "allow only these addresses or CIDR ranges (repeatable or comma-separated)")
	cmd.Flags().StringVar(&expires, "expires-at", "", "when it stops working (default: never)")
	cmd.Flags().StringVar(&code, "totp-code", "", "current two-factor code, when the token gate is on")
	return cmd
}

func tokenListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List your auth tokens (never their secrets)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/auth/tokens"}, listTable("", tokenCols))
		},
	}
}

func tokenGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show one auth token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(cmd, deckhand.Request{Method: http.MethodGet, Path: tokenPath(args[0])}, objectTable(tokenCols))
		},
	}
}

func tokenPatchCmd(use, short string, enabled bool) *cobra.Command {
	var code string
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(cmd, deckhand.Request{Method: http.MethodPatch, Path: tokenPath(args[0]),
				Body: map[string]any{"is_enabled": enabled}, Header: codeHeader(code)}, objectTable(tokenCols))
		},
	}
	cmd.Flags().StringVar(&code, "totp-code", "", "current two-factor code, when the token gate is on")
	return cmd
}

func tokenRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "revoke ID",
		Aliases: []string{"rm", "delete"},
		Short:   "Revoke an auth token permanently",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return remove(cmd, tokenPath(args[0]), args[0], "revoked")
		},
	}
}
