package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"deckhand/agent"
	"deckhand/agent/cli/output"
	"deckhand/agent/gateway"
	"deckhand/platform/netconf"
)

func networkCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "network",
		Short: "Show the container's egress: whether the rules are in force and the last decisions",
		Long: "Asks the agent at --listen for its network layer: whether the rules are in force, whether they can be\n" +
			"(CAP_NET_ADMIN), the configuration version, the proxy check, counts, and the newest egress decisions\n" +
			"(destination, name, proxy, reason; never a payload). Every decision is also in the journal:\n" +
			"deckhand logs --source egress. Exits non-zero when the agent cannot enforce its configuration.",
		Example: "  deckhand network\n  deckhand network -o json | jq '.recent[] | select(.outcome==\"denied\")'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, _, err := fetchStatus(listen)
			if err != nil {
				return err
			}
			if st.Egress == nil {
				return fmt.Errorf("the agent at %s has no network layer: it runs without --control-url", listen)
			}
			eg := *st.Egress
			if err := output.New(cmd).Print(eg, func(t *output.TableWriter) { printEgress(t, eg) }); err != nil {
				return err
			}
			if !eg.Enforceable {
				return fmt.Errorf("the network configuration is not enforceable: %s", eg.Reason)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7700", "the agent's gateway address")
	return cmd
}

func printEgress(t *output.TableWriter, e netconf.Status) {
	state := "not in force"
	if e.IsRunning {
		state = "in force"
	}
	if !e.Enforceable {
		state = "not enforceable: " + e.Reason
	}
	t.Line("rules %s, configuration version %d, allowed %d, denied %d, dropped packets %d", state, e.Version, e.Allowed, e.Denied, e.Dropped)
	if e.ProxyReachable != nil {
		t.Line("proxy reachable: %v", *e.ProxyReachable)
	}
	if e.Error != "" {
		t.Line("error: %s", e.Error)
	}
	if len(e.Recent) == 0 {
		t.Line("no egress decisions yet")
		return
	}
	t.Row("TIME", "OUTCOME", "PROTO", "DESTINATION", "NAME", "VIA", "REASON")
	for _, d := range e.Recent {
		t.Row(d.Time.Local().Format("15:04:05.000"), d.Outcome, d.Protocol, d.Destination, d.Name, d.Via, d.Reason)
	}
}

// fetchStatus asks the agent at listen for its status: the decoded form
// and the body as it came.
func fetchStatus(listen string) (agent.Status, []byte, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Get("http://" + listen + gateway.StatusPath)
	if err != nil {
		return agent.Status{}, nil, fmt.Errorf("no agent answers at %s (--listen): %w", listen, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return agent.Status{}, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return agent.Status{}, nil, fmt.Errorf("agent at %s answered %d: %s", listen, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	var st agent.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return agent.Status{}, nil, fmt.Errorf("agent at %s: unreadable status: %w", listen, err)
	}
	return st, raw, nil
}
