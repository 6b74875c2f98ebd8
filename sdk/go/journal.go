package deckhand

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// JournalQuery selects a container's journal entries (GET /api/v1/journal).
type JournalQuery struct {
	Source string // comma list: agent, cron, a program id ...
	Level  string // this level and more severe: debug, info, warn, error
	Since  string // RFC 3339, or a duration back (15m)
	Until  string
	Text   string // messages containing this (case-insensitive)
	Regex  string // messages matching this RE2 expression
	// Limit is how many of the newest entries to start with (0: the
	// service's default).
	Limit int
}

func (q JournalQuery) values() url.Values {
	v := url.Values{"format": {"json"}}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	for k, s := range map[string]string{"source": q.Source, "level": q.Level, "since": q.Since, "until": q.Until, "text": q.Text, "regex": q.Regex} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// Journal calls fn with each entry q selects, oldest first, as the JSON
// object the service writes. fn's error ends it with that error.
func (c *Container) Journal(ctx context.Context, q JournalQuery, fn func(entry []byte) error) error {
	resp, err := c.journal(ctx, q.values(), "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// JournalFollow tunes FollowJournal.
type JournalFollow struct {
	// OnGap is told when entries were removed by retention before they
	// could be read (the stream goes on at the oldest kept).
	OnGap func()
	// OnReconnect is told why a stream ended before it connects again.
	OnReconnect func(err error)
	// Retries is how many failed connections in a row end the follow
	// (0: 10).
	Retries int
}

// ErrStreamClosed is what OnReconnect is told when the agent ended a
// stream without an error.
var ErrStreamClosed = errors.New("closed by the agent")

// FollowJournal is Journal that goes on with each entry as it is
// written, until ctx ends (then it answers nil). When a stream drops it
// connects again after the last entry seen (Last-Event-ID), so no entry
// comes twice. fn's error, or the service's refusal, ends it.
func (c *Container) FollowJournal(ctx context.Context, q JournalQuery, o JournalFollow, fn func(entry []byte) error) error {
	v := q.values()
	v.Set("follow", "true")
	lastID := ""
	fails := 0
	for {
		resp, err := c.journal(ctx, v, lastID)
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.Status < 500 {
			return err
		}
		if err == nil {
			fails = 0
			err = readEvents(resp.Body, func(ev event) error {
				if ev.ID != "" {
					lastID = ev.ID
				}
				switch {
				case ev.Event == "gap" && o.OnGap != nil:
					o.OnGap()
				case ev.Event == "entry" && ev.HasData:
					if err := fn([]byte(ev.Data)); err != nil {
						return callbackError{err}
					}
				}
				return nil
			})
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return nil
		}
		var cbErr callbackError
		if errors.As(err, &cbErr) {
			return cbErr.err
		}
		if err == nil {
			err = ErrStreamClosed
		}
		limit := o.Retries
		if limit <= 0 {
			limit = 10
		}
		if fails++; fails > limit {
			return fmt.Errorf("deckhand: the journal stream keeps failing: %w", err)
		}
		if o.OnReconnect != nil {
			o.OnReconnect(err)
		}
		if sleepCtx(ctx, time.Duration(fails)*500*time.Millisecond) != nil {
			return nil
		}
	}
}

func (c *Container) journal(ctx context.Context, q url.Values, lastID string) (*http.Response, error) {
	h := http.Header{}
	if q.Get("follow") == "true" {
		h.Set("Accept", "text/event-stream")
	}
	if lastID != "" {
		h.Set("Last-Event-ID", lastID)
	}
	return c.get(ctx, "journal", "/api/v1/journal", q, h)
}

// event is one Server-Sent Event.
type event struct {
	ID    string // the last id: field seen (it persists across events, as EventSource keeps it)
	Event string // the event: field ("message" when absent)
	Data  string // the data: lines joined with \n
	// HasData is false for an event that only moved the id (a position
	// past entries that did not match).
	HasData bool
}

// readEvents reads the text/event-stream r and calls fn for each event
// (including id-only ones) until r ends or fn fails.
func readEvents(r io.Reader, fn func(event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var (
		ev      event
		data    []string
		pending bool
	)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if pending {
				ev.Data, ev.HasData = strings.Join(data, "\n"), len(data) > 0
				if ev.Event == "" {
					ev.Event = "message"
				}
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data, pending = event{ID: ev.ID}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment (keep-alive)
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID, pending = value, true
		case "event":
			ev.Event, pending = value, true
		case "data":
			data, pending = append(data, value), true
		}
	}
	return sc.Err()
}
