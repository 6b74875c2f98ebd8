package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli"
	"deckhand/agent/cli/output"
	"deckhand/platform/config"
)

// tunnelCmd is the client side of the tunnel service (the SDK's
// Container.Forward): `deckhand tunnel --remote 22` forwards a local port
// like ssh -L to the agent --agent, --container or --url names.
func tunnelCmd() *cobra.Command {
	var (
		o                    deckhand.ForwardOptions
		agentURL, serviceURL string
		token                string
		headers              []string
		logLevel             string
		container            string
	)
	cmd := &cobra.Command{
		Use:   "tunnel",
		Short: "Forward a local port to a port in the container (like ssh -L)",
		Long: "Forward a local port to a port in the container through the tunnel service's WebSocket, like ssh -L. The\n" +
			"container is --container's (found through the control plane), else the agent --agent (DECKHAND_AGENT_URL)\n" +
			"names; --url names the tunnel service itself.\n\n" +
			"Each local connection gets its own WebSocket; a drop ends only the connections in flight and the next one\n" +
			"reconnects (retrying for --connect-timeout while the service is unreachable). The token (--token or\n" +
			"DECKHAND_TOKEN) goes as Authorization: Bearer and as the --token-cookie cookie (and --token-query when set),\n" +
			"so the gateway's proxy permissions can check it on the WebSocket upgrade.",
		Example: "  deckhand tunnel --container c-1a2b --local 127.0.0.1:2222 --remote 22\n  ssh -p 2222 user@127.0.0.1\n" +
			"  DECKHAND_AGENT_URL=http://10.0.0.5:7700 deckhand tunnel --remote 8080\n" +
			"  deckhand tunnel --url https://c1.example.com/_/tunnel --remote 22",
		Args:    cobra.NoArgs,
		GroupID: cli.GroupAgent,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Header = http.Header{}
			for _, h := range headers {
				k, v, ok := strings.Cut(h, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return fmt.Errorf("--header: must be \"Name: value\", got %q", h)
				}
				o.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
			if err := checkForward(o); err != nil {
				return err
			}
			var box *deckhand.Container
			var err error
			switch {
			case container != "":
				// The tunnel outlives a command: a token minted for it lasts
				// the most an access token may.
				u, tok, aerr := cli.AgentOf(cmd, container, token, cli.MaxAccessTTL)
				if aerr != nil {
					return aerr
				}
				box, err = deckhand.NewContainer(u, deckhand.Options{Token: tok})
			case serviceURL != "":
				// ws:// and wss:// name the same service as http:// and https://.
				u := "http" + strings.TrimPrefix(strings.TrimPrefix(serviceURL, "ws"), "http")
				if box, err = deckhand.NewService("tunnel", u, deckhand.Options{Token: token}); err != nil {
					return fmt.Errorf("--url: must be the tunnel service's http(s):// URL, got %q", serviceURL)
				}
			default:
				if box, err = deckhand.NewContainer(agentURL, deckhand.Options{Token: token}); err != nil {
					return fmt.Errorf("--agent: must be the agent's http(s):// URL, got %q", agentURL)
				}
			}
			if err != nil {
				return err
			}
			shown := box.ServiceURL("tunnel")
			o.Logger = config.Logger(os.Stderr, logLevel)
			p := output.New(cmd)
			o.Listening = func(a net.Addr) {
				// People read the line on stderr; a script gets -o json's
				// record on stdout (where to connect) and nothing else there.
				open := openURL(a, o.Remote)
				preview := ""
				if container != "" && open != "" {
					preview = cli.PreviewURLOf(o.Remote)
				}
				if p.Structured() {
					rec := map[string]any{"listen": a.String(), "remote": o.Remote, "url": shown}
					if open != "" {
						rec["open"] = open
					}
					if preview != "" {
						rec["preview"] = preview
					}
					_ = p.Item(rec, nil)
					return
				}
				fmt.Fprintf(os.Stderr, "deckhand tunnel: listening on %s, forwarding to port %d\n", a, o.Remote)
				if open != "" {
					fmt.Fprintf(os.Stderr, "deckhand tunnel: a web app on port %d opens at %s (at the root of its own address, so its "+
						"root-relative links work, unlike under the gateway's /_/tunnel/proxy/%d/)\n", o.Remote, open, o.Remote)
				}
				if preview != "" {
					fmt.Fprintf(os.Stderr, "deckhand tunnel: through the platform proxy it is %s (with a credential the container's "+
						"permissions admit; deckhand preview %d --container %s prints a link for anyone)\n", preview, o.Remote, container)
				}
			}
			ctx, stop := cli.Context(cmd)
			defer stop()
			return box.Forward(ctx, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&agentURL, "agent", cli.AgentDefault(), "the container's agent (gateway) URL; env "+cli.AgentEnv)
	fl.StringVar(&serviceURL, "url", "", "the tunnel service's own URL (http://127.0.0.1:7706, or https://HOST/_/tunnel), instead of --agent's")
	cli.AddContainerFlag(cmd, &container)
	fl.StringVar(&o.Local, "local", "127.0.0.1:0", "local address to listen on")
	fl.IntVar(&o.Remote, "remote", 0, "port inside the container")
	fl.StringVar(&token, "token", "", "token for the gateway (prefer DECKHAND_TOKEN: flags show in ps)")
	fl.StringVar(&o.TokenCookie, "token-cookie", "deckhand_token", "cookie the token is also sent in (empty: none)")
	fl.StringVar(&o.TokenQuery, "token-query", "", "query parameter the token is also sent in (empty: none; query strings reach logs)")
	fl.StringArrayVar(&headers, "header", nil, "further request header \"Name: value\" (repeatable)")
	fl.DurationVar(&o.PingInterval, "ping-interval", 15*time.Second, "WebSocket ping interval; a peer silent for two is cut")
	fl.DurationVar(&o.ConnectTimeout, "connect-timeout", 30*time.Second, "how long a local connection waits while the service is unreachable")
	fl.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// openURL is where a browser opens a web app the tunnel forwards to: the
// root of the local address, so the app's root-relative links (/style.css)
// resolve, which they do not under a path prefix. None for ssh's port.
func openURL(a net.Addr, remote int) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || remote == 22 {
		return ""
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port)) + "/"
}

// checkForward checks the flags a forward needs, naming the one at fault.
func checkForward(o deckhand.ForwardOptions) error {
	switch {
	case o.Remote < 1 || o.Remote > 65535:
		return fmt.Errorf("--remote: must be a port from 1 to 65535, got %d", o.Remote)
	case o.PingInterval <= 0:
		return fmt.Errorf("--ping-interval: must be positive")
	case o.ConnectTimeout <= 0:
		return fmt.Errorf("--connect-timeout: must be positive")
	}
	if _, _, err := net.SplitHostPort(o.Local); err != nil {
		return fmt.Errorf("--local: must be HOST:PORT, got %q", o.Local)
	}
	return nil
}
