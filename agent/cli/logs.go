package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

func logsCmd() *cobra.Command {
	var (
		follow                            bool
		source, level, since, until, grep string
		regex                             string
		lines                             int
	)
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Read the container's journal, or follow it (-f)",
		Long: "Prints journal entries oldest first: the last -n without --since, else from --since on. With -f it\n" +
			"keeps printing entries as they are written, and reconnects where it stopped when the connection drops.\n" +
			"Table output is one line per entry (time, source, level, message); -o json prints each entry as one\n" +
			"JSON line, -o yaml as one document.",
		Example: "  deckhand logs -f --source cron\n  deckhand logs --level error --since 1h -o json | jq .message",
		Args:    cobra.NoArgs,
	}
	ag := AddAgentFlags(cmd)
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new entries")
	f.StringVar(&source, "source", "", "only these sources (comma list: agent, cron, a program id ...)")
	f.StringVar(&level, "level", "", "only this level and more severe: debug, info, warn, error")
	f.StringVar(&since, "since", "", "from this time: RFC 3339, or a duration back (15m)")
	f.StringVar(&until, "until", "", "up to this time: RFC 3339, or a duration back")
	f.StringVar(&grep, "grep", "", "only messages containing this (case-insensitive)")
	f.StringVar(&regex, "regex", "", "only messages matching this RE2 expression")
	f.IntVarP(&lines, "lines", "n", 100, "how many of the newest entries to start with (1-10000)")
	cmd.RunE = ag.runE(func(ctx context.Context, cmd *cobra.Command, _ []string, box *deckhand.Container) error {
		q := deckhand.JournalQuery{Source: source, Level: level, Since: since, Until: until, Text: grep, Regex: regex, Limit: lines}
		p := output.New(cmd)
		print := func(line []byte) error {
			var e struct {
				Time    time.Time `json:"time"`
				Source  string    `json:"source"`
				Level   string    `json:"level"`
				Message string    `json:"message"`
			}
			if err := json.Unmarshal(line, &e); err != nil {
				return fmt.Errorf("unreadable journal entry: %w", err)
			}
			return p.Item(json.RawMessage(line), func(t *output.TableWriter) {
				t.Line("%s %s %s %s", e.Time.Local().Format("2006-01-02T15:04:05.000"), e.Source, e.Level, e.Message)
			})
		}
		if !follow {
			return ag.explain(box.Journal(ctx, q, print))
		}
		return ag.explain(box.FollowJournal(ctx, q, deckhand.JournalFollow{
			OnGap: func() {
				fmt.Fprintln(os.Stderr, "deckhand logs: entries were removed by retention before they could be read; continuing at the oldest kept")
			},
			OnReconnect: func(err error) {
				fmt.Fprintf(os.Stderr, "deckhand logs: stream ended (%v); reconnecting\n", explainAgent(ag.base, err))
			},
		}, print))
	})
	return cmd
}
