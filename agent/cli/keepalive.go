package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

var leaseCols = output.Cols("ID=id", "SECONDS=duration_seconds", "EXPIRES=expires_at")

// keepaliveCmd takes a keep-alive lease on a container's agent: while it
// lasts the container does not count as idle, so a long quiet step (a
// `sleep` in a tool call, a wait on something outside) does not get it
// stopped or paused by its idle timeout.
func keepaliveCmd() *cobra.Command {
	var d time.Duration
	cmd := &cobra.Command{
		Use:   "keepalive [--for DURATION]",
		Short: "Keep the container from counting as idle for a while (a keep-alive lease)",
		Long: "Takes a keep-alive lease on the container's agent (POST /api/v1/agent/leases): until it ends the agent reports the " +
			"container busy, so its idle timeout (idle_timeout_seconds) neither stops nor pauses it. Run it inside the container " +
			"before a long quiet step, or from outside with --container. The lease ends by itself; take another to go on. " +
			"-o json prints the lease ({id, duration_seconds, created_at, expires_at}).",
		Example: "  deckhand keepalive --for 15m\n  deckhand keepalive --for 2h --container c1 -o json",
		Args:    cobra.NoArgs,
	}
	ag := AddAgentFlags(cmd)
	cmd.Flags().DurationVar(&d, "for", 15*time.Minute, "how long the container counts as busy: 1s-24h")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if d < time.Second || d > 24*time.Hour || d%time.Second != 0 {
			return fmt.Errorf("--for: must be whole seconds between 1s and 24h, got %s", d)
		}
		client, err := ag.Client()
		if err != nil {
			return err
		}
		ctx, stop := Context(cmd)
		defer stop()
		l, err := client.Keepalive(ctx, d)
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(map[string]any{"id": l.ID, "duration_seconds": int(l.Duration / time.Second),
			"created_at": l.CreatedAt, "expires_at": l.ExpiresAt})
		return printData(cmd, raw, objectTable(leaseCols))
	}
	return cmd
}
