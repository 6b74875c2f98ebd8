package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"deckhand/agent/cli/agentapi"
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
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		client, err := ag.Client()
		if err != nil {
			return err
		}
		q := url.Values{"format": {"json"}, "limit": {strconv.Itoa(lines)}}
		for k, v := range map[string]string{"source": source, "level": level, "since": since, "until": until, "text": grep, "regex": regex} {
			if v != "" {
				q.Set(k, v)
			}
		}
		ctx, stop := Context(cmd)
		defer stop()
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
			return p.Item(json.RawMessage(line), func(t *output.TableWriter) error {
				t.Line("%s %s %s %s", e.Time.Local().Format("2006-01-02T15:04:05.000"), e.Source, e.Level, e.Message)
				return nil
			})
		}
		if !follow {
			req, err := client.NewRequest(ctx, http.MethodGet, "journal", "/api/v1/journal", q, nil)
			if err != nil {
				return err
			}
			resp, err := client.Send(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return agentapi.ErrorOf(resp)
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			for sc.Scan() {
				if len(sc.Bytes()) == 0 {
					continue
				}
				if err := print(sc.Bytes()); err != nil {
					return err
				}
			}
			return sc.Err()
		}
		return followJournal(ctx, client, q, print)
	}
	return cmd
}

// followJournal streams the journal and, when the stream ends, connects
// again after the last entry seen (Last-Event-ID), until ctx ends. A
// failure to print (stdout closed) ends it at once.
func followJournal(ctx context.Context, client *agentapi.Client, q url.Values, print func([]byte) error) error {
	q.Set("follow", "true")
	lastID := ""
	fails := 0
	for {
		req, err := client.NewRequest(ctx, http.MethodGet, "journal", "/api/v1/journal", q, nil)
		if err != nil {
			return err
		}
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err := client.Send(req)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = agentapi.ErrorOf(resp)
			resp.Body.Close()
			var ae *agentapi.Error
			if errors.As(err, &ae) && ae.Status < 500 {
				return err
			}
		} else if err == nil {
			fails = 0
			err = agentapi.ReadEvents(resp.Body, func(ev agentapi.Event) error {
				if ev.ID != "" {
					lastID = ev.ID
				}
				switch {
				case ev.Event == "gap":
					fmt.Fprintln(os.Stderr, "deckhand logs: entries were removed by retention before they could be read; continuing at the oldest kept")
				case ev.Event == "entry" && ev.HasData:
					if err := print([]byte(ev.Data)); err != nil {
						return printErr{err}
					}
				}
				return nil
			})
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return nil
		}
		var pe printErr
		if errors.As(err, &pe) {
			return pe.err
		}
		if fails++; fails > 10 {
			return fmt.Errorf("the journal stream keeps failing: %v", err)
		}
		fmt.Fprintf(os.Stderr, "deckhand logs: stream ended (%v); reconnecting\n", errOrEOF(err))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Duration(fails) * 500 * time.Millisecond):
		}
	}
}

type printErr struct{ err error }

func (p printErr) Error() string { return p.err.Error() }

func errOrEOF(err error) error {
	if err == nil {
		return errors.New("closed by the agent")
	}
	return err
}
