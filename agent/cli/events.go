package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/output"
)

var eventCols = output.Cols("TIME=created_at", "TYPE=event_type", "RESOURCE=resource_type", "RESOURCE ID=resource_id",
	"PROJECT=project_id", "CONTAINER=container_id", "ID=id")

func eventsCmd() *cobra.Command {
	var (
		f                 map[string]*string
		since, until      string
		limit, offset     int
		sortBy, sortOrder string
		follow            bool
		interval          time.Duration
	)
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List the event log, or follow it",
		Long: "Lists the events you may see (newest first). --since and --until take an ISO 8601 date or time, or a\n" +
			"duration back from now (15m, 2h). --follow prints each new event as it is recorded (it asks every\n" +
			"--interval); with -o json each event is one line (JSON lines).",
		Example: "  deckhand events --type wallet.transferred_to_ai --since 24h\n  deckhand events --follow -o json | jq -r .event_type",
		Args:    cobra.NoArgs,
		GroupID: GroupControl,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			q := url.Values{}
			for name, v := range f {
				if *v != "" {
					q.Set(name, *v)
				}
			}
			now := time.Now()
			if since != "" {
				if since, err = dateArg("--since", since, now); err != nil {
					return err
				}
				q.Set("start_date", since)
			}
			if until != "" {
				if until, err = dateArg("--until", until, now); err != nil {
					return err
				}
				q.Set("end_date", until)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			if follow {
				if since == "" {
					q.Set("start_date", now.UTC().Format(time.RFC3339Nano))
				}
				return followEvents(cmd, c, q, interval)
			}
			if offset > 0 {
				q.Set("offset", strconv.Itoa(offset))
			}
			if sortBy != "" {
				q.Set("sort_by", sortBy)
			}
			if sortOrder != "" {
				q.Set("sort_order", sortOrder)
			}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/events", Query: q})
			if err != nil {
				return err
			}
			return printData(cmd, resp.Data, func(t *output.TableWriter, d any) {
				t.Objects(output.Field(d, "events"), eventCols)
				if pg := output.Field(d, "pagination"); pg != nil {
					t.Line("%s of %s", output.Cell(len(asList(output.Field(d, "events")))), output.Cell(output.Field(pg, "total")))
				}
			})
		},
	}
	fl := cmd.Flags()
	f = map[string]*string{
		"event_type":    fl.String("type", "", "only this event type (e.g. auth.token.created)"),
		"resource_type": fl.String("resource-type", "", "only this resource type"),
		"resource_id":   fl.String("resource-id", "", "only this resource"),
		"project_id":    fl.String("project", "", "only this project"),
		"container_id":  fl.String("container", "", "only this container"),
		"realm_id":      fl.String("realm", "", "only this realm"),
	}
	fl.StringVar(&since, "since", "", "events at or after: ISO 8601, or a duration back (2h)")
	fl.StringVar(&until, "until", "", "events at or before: ISO 8601, or a duration back")
	fl.IntVar(&limit, "limit", 0, "at most this many (1-500; server default 100)")
	fl.IntVar(&offset, "offset", 0, "skip this many")
	fl.StringVar(&sortBy, "sort-by", "", "created_at or event_type")
	fl.StringVar(&sortOrder, "sort-order", "", "asc or desc (default desc)")
	fl.BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	fl.DurationVar(&interval, "interval", 2*time.Second, "how often --follow asks")
	return cmd
}

func asList(v any) []any { l, _ := v.([]any); return l }

// dateArg turns a duration back from now into a timestamp; anything else is
// passed on for the server to judge.
func dateArg(flag, v string, now time.Time) (string, error) {
	if d, err := time.ParseDuration(strings.TrimPrefix(v, "-")); err == nil {
		if d < 0 {
			return "", fmt.Errorf("%s: a duration back from now must be positive", flag)
		}
		return now.Add(-d).UTC().Format(time.RFC3339Nano), nil
	}
	return v, nil
}

// followEvents polls oldest first from the last time seen. start_date is
// inclusive, so the events of that instant are asked again and the ones
// already printed are skipped by id.
func followEvents(cmd *cobra.Command, c *control, q url.Values, interval time.Duration) error {
	if interval < 100*time.Millisecond {
		return fmt.Errorf("--interval: must be at least 100ms")
	}
	ctx, stop := Context(cmd)
	defer stop()
	p := output.New(cmd)
	limit := 100
	if v, err := strconv.Atoi(q.Get("limit")); err == nil && v > 0 {
		limit = v
	}
	q.Set("limit", strconv.Itoa(limit))
	q.Set("sort_order", "asc")
	q.Set("sort_by", "created_at")
	seen := map[string]bool{}
	header := true
	for {
		resp, err := c.send(ctx, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/events", Query: q})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		var page struct {
			Events []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(resp.Data, &page); err != nil {
			return fmt.Errorf("unreadable event list: %w", err)
		}
		last := q.Get("start_date")
		fresh := 0
		for _, raw := range page.Events {
			var ev struct {
				ID        string `json:"id"`
				CreatedAt string `json:"created_at"`
			}
			if json.Unmarshal(raw, &ev) != nil || seen[ev.ID] {
				continue
			}
			if ev.CreatedAt != last {
				clear(seen) // only the newest instant can come again
				last = ev.CreatedAt
			}
			seen[ev.ID] = true
			fresh++
			d, err := output.Decode(raw)
			if err != nil {
				return err
			}
			first := header
			header = false
			if err := p.Item(raw, func(t *output.TableWriter) {
				if first {
					t.Header(eventCols)
				}
				t.ObjectRow(d, eventCols)
			}); err != nil {
				return err
			}
		}
		q.Set("start_date", last)
		if fresh > 0 && len(page.Events) >= limit {
			continue // more are waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func notificationsCmd() *cobra.Command {
	var unread bool
	cmd := &cobra.Command{
		Use:     "notifications",
		Short:   "List your notifications (global and your own)",
		Args:    cobra.NoArgs,
		GroupID: GroupControl,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			resp, err := c.call(cmd, deckhand.Request{Method: http.MethodGet, Path: "/api/v1/notifications/"})
			if err != nil {
				return err
			}
			if unread {
				if resp.Data, err = onlyUnread(resp.Data); err != nil {
					return err
				}
			}
			return printData(cmd, resp.Data, func(t *output.TableWriter, d any) {
				t.Objects(output.Field(d, "notifications"), output.Cols("ID=id", "LEVEL=level", "TITLE=title", "BODY=body",
					"READ=is_read", "CREATED=created_at"))
				t.Line("%s unread of %s", output.Cell(output.Field(d, "unread")), output.Cell(output.Field(d, "total")))
			})
		},
	}
	cmd.Flags().BoolVar(&unread, "unread", false, "only those not read yet")
	cmd.AddCommand(notificationsReadCmd())
	return cmd
}

// onlyUnread keeps the notifications whose is_read is false (the other
// fields of data stay as sent).
func onlyUnread(data json.RawMessage) (json.RawMessage, error) {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("unreadable notification list: %w", err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(d["notifications"], &list); err != nil {
		return nil, fmt.Errorf("unreadable notification list: %w", err)
	}
	kept := []json.RawMessage{}
	for _, n := range list {
		var r struct {
			IsRead bool `json:"is_read"`
		}
		if json.Unmarshal(n, &r) == nil && !r.IsRead {
			kept = append(kept, n)
		}
	}
	d["notifications"], _ = json.Marshal(kept)
	return json.Marshal(d)
}

func notificationsReadCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "read [ID...]",
		Short: "Mark notifications as read (--all: every one)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return fmt.Errorf("give notification IDs or --all")
			}
			c, err := loadControl(true)
			if err != nil {
				return err
			}
			if all {
				resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPut, Path: "/api/v1/notifications/read-all"})
				if err != nil {
					return err
				}
				return output.New(cmd).Line(resp.Data, "%s.", resp.Message)
			}
			var done []json.RawMessage
			for _, id := range args {
				resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPut, Path: "/api/v1/notifications/" + url.PathEscape(id) + "/read"})
				if err != nil {
					return fmt.Errorf("%s: %w", id, err)
				}
				done = append(done, resp.Data)
			}
			raw, _ := json.Marshal(done)
			return output.New(cmd).Line(json.RawMessage(raw), "Marked %d as read.", len(args))
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "mark every notification as read")
	return cmd
}
