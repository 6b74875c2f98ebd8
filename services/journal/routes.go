package journal

import (
	"bufio"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Routes is the journal's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"journal"}
	return []platform.Route{
		{Method: "GET", Path: "/api/v1/journal", Tags: tags, Summary: "Read or follow the journal",
			Description: "Without cursor and since: the newest `limit` entries, oldest first (journalctl -n). With cursor: the " +
				"entries after it (before it with reverse=true); with since: from that time. format=json answers JSON lines " +
				"(application/x-ndjson), one entry per line with its cursor first; format=short answers journalctl's short text. " +
				"X-Journal-Cursor is where the next read continues. follow=true answers Server-Sent Events (text/event-stream): " +
				"the same first page, then every new matching entry as it is written, each event `entry` with id = its cursor " +
				"(data: the JSON line, or the short line); a reconnect with Last-Event-ID (what EventSource sends) or cursor= " +
				"resumes exactly after it. Comments keep the stream alive every 15 s; an `id:` without data moves the position " +
				"past entries that did not match. A resume older than the oldest kept entry first sends an event `gap`.",
			Query: []platform.Param{
				{Name: "source", Description: "only entries of these sources (comma list: agent, cron, a program id ...)"},
				{Name: "level", Enum: levels, Description: "only this level and more severe ones"},
				{Name: "since", Description: "only entries at or after: RFC 3339 time, or a duration back from now (-15m, 2h)"},
				{Name: "until", Description: "only entries at or before: RFC 3339 time, or a duration back from now"},
				{Name: "text", Description: "only messages containing this (case-insensitive)"},
				{Name: "regex", Description: "only messages matching this RE2 regular expression ((?i) for case-insensitive)"},
				{Name: "cursor", Description: "resume after this position (an entry's cursor or X-Journal-Cursor)"},
				{Name: "reverse", Type: "boolean", Default: "false", Description: "newest first; with cursor, the entries before it"},
				{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: 10000}, Default: "100", Description: "at most this many entries (follow: in the first page)"},
				{Name: "format", Enum: []string{"json", "short"}, Default: "json", Description: "JSON lines or short text"},
				{Name: "follow", Type: "boolean", Default: "false", Description: "stay open and stream new entries as Server-Sent Events"},
				{Name: "Last-Event-ID", In: "header", Description: "follow: resume after this cursor (EventSource sends it on reconnect)"},
			},
			ContentType: "application/x-ndjson", HTTP: http.HandlerFunc(s.serveRead)},
		{Method: "POST", Path: "/api/v1/journal/flush", Tags: tags, Summary: "Write buffered entries to disk",
			Description: "Delivers what this process's writers have buffered and commits everything the journal holds in memory " +
				"(entries are otherwise committed every 100 ms); answers how many entries this flush wrote.",
			Response: Flushed{}, Handler: s.handleFlush},
		{Method: "GET", Path: "/api/v1/journal/stats", Tags: tags, Summary: "Journal statistics",
			Description: "Entries and bytes kept, the oldest and newest entry's time, counts by source and by level, and totals.",
			Response:    Stats{}, Handler: s.handleStats},
	}
}

func (s *Service) handleFlush(c fiber.Ctx) error {
	f, err := s.Flush(c.Context())
	if err != nil {
		return err
	}
	return platform.JSON(c, fiber.StatusOK, f)
}

func (s *Service) handleStats(c fiber.Ctx) error {
	st, err := s.stats()
	if err != nil {
		return err
	}
	st.Pending = s.pendingCount()
	st.Dropped += s.droppedCount()
	st.MaxBytes, st.MaxAgeSeconds = s.set.MaxBytes, int64(s.set.MaxAge/time.Second)
	st.FileBytes = s.fileBytes()
	return platform.JSON(c, fiber.StatusOK, st)
}

// parseTime reads since/until: RFC 3339, or a duration back from now.
func parseTime(name, v string, now time.Time) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return &t, nil
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(v, "-")); err == nil && d >= 0 {
		t := now.Add(-d)
		return &t, nil
	}
	return nil, platform.Invalid(name, "must be an RFC 3339 time (2026-01-02T15:04:05Z) or a duration back from now (-15m)")
}

// queryOf builds the read the request asks for.
func (s *Service) queryOf(r *http.Request) (Query, error) {
	p := platform.QueryFrom(r.Context())
	q := Query{Cursor: p.String("cursor"), Reverse: p.Bool("reverse"), Limit: int(p.Int("limit"))}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		q.Cursor = id
	}
	for _, src := range strings.Split(p.String("source"), ",") {
		if src = strings.TrimSpace(src); src != "" {
			q.Sources = append(q.Sources, src)
		}
	}
	if lv := p.String("level"); lv != "" {
		q.MinLevel = int(levelOf(lv))
	}
	now := s.clock.Now()
	var err error
	if q.Since, err = parseTime("since", p.String("since"), now); err != nil {
		return q, err
	}
	if q.Until, err = parseTime("until", p.String("until"), now); err != nil {
		return q, err
	}
	if q.Since != nil && q.Until != nil && q.Until.Before(*q.Since) {
		return q, platform.Invalid("until", "must not be before since")
	}
	q.Text = p.String("text")
	if re := p.String("regex"); re != "" {
		if len(re) > 1024 {
			return q, platform.Invalid("regex", "must be at most 1024 characters")
		}
		if q.Regex, err = regexp.Compile(re); err != nil {
			return q, platform.Invalid("regex", "is not an RE2 regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	if q.Reverse && p.Bool("follow") {
		return q, platform.Invalid("reverse", "cannot be combined with follow")
	}
	return q, nil
}

func (s *Service) serveRead(w http.ResponseWriter, r *http.Request) {
	q, err := s.queryOf(r)
	if err != nil {
		platform.WriteHTTPError(w, err)
		return
	}
	p := platform.QueryFrom(r.Context())
	short := p.String("format") == "short"
	if p.Bool("follow") {
		s.follow(w, r, q, short)
		return
	}
	page, err := s.Read(q)
	if err != nil {
		platform.WriteHTTPError(w, err)
		return
	}
	h := w.Header()
	h.Set("X-Journal-Cursor", page.Cursor)
	if page.Gap {
		h.Set("X-Journal-Gap", "true")
	}
	var buf []byte
	if short {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		for _, e := range page.Entries {
			buf = shortLine(buf, e)
		}
	} else {
		h.Set("Content-Type", "application/x-ndjson")
		for _, l := range page.Lines {
			buf = append(append(buf, l...), '\n')
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(buf)))
	_, _ = w.Write(buf)
}

// keepAlive is how often a quiet follow stream gets a comment (which also
// notices a client that went away).
const keepAlive = 15 * time.Second

// follow streams the first page and then new entries as Server-Sent Events
// until the client goes, or the service or the server stops.
func (s *Service) follow(w http.ResponseWriter, r *http.Request, q Query, short bool) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		platform.WriteHTTPError(w, platform.Errorf(platform.CodeInternal, "streaming is not supported here"))
		return
	}
	// Read the request's Done channel once, before the response starts:
	// fasthttp resets it at shutdown without synchronization.
	gone := r.Context().Done()
	snap, changed := s.current()
	page, err := s.read(q, snap)
	if err != nil {
		platform.WriteHTTPError(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Journal-Cursor", page.Cursor)
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	if page.Gap {
		fmt.Fprintf(bw, "event: gap\ndata: {\"message\":\"entries before the oldest kept one were removed by retention; resuming at the oldest\"}\n\n")
	}
	// Later pages are plain forward reads after the last position.
	q.Cursor, q.Since, q.Reverse = "", nil, false
	last := page.last
	lastSent := page.Cursor
	write := func(p Page) {
		for i, e := range p.Entries {
			bw.WriteString("id: " + e.Cursor + "\nevent: entry\ndata: ")
			if short {
				line := shortLine(nil, e)
				bw.WriteString(strings.ReplaceAll(strings.TrimRight(string(line), "\n"), "\n", "\ndata: "))
			} else {
				bw.Write(p.Lines[i])
			}
			bw.WriteString("\n\n")
			lastSent = e.Cursor
		}
		if p.Cursor != lastSent {
			// Entries were scanned past without a match: move the
			// reader's Last-Event-ID past them too.
			bw.WriteString("id: " + p.Cursor + "\n\n")
			lastSent = p.Cursor
		}
	}
	write(page)
	if bw.Flush() != nil {
		return
	}
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-changed:
		case <-tick.C:
			if _, err := bw.WriteString(": keep-alive\n\n"); err != nil || bw.Flush() != nil {
				return
			}
			flusher.Flush()
			continue
		case <-gone:
			return
		case <-s.ctx.Done():
			return
		}
		for {
			snap, changed = s.current()
			if last >= snap.head {
				break
			}
			q.Cursor = makeCursor(snap.id, last)
			p, err := s.read(q, snap)
			if err != nil {
				return
			}
			if p.Gap {
				fmt.Fprintf(bw, "event: gap\ndata: {\"message\":\"the reader fell behind retention; resuming at the oldest kept entry\"}\n\n")
			}
			write(p)
			last = p.last
			if bw.Flush() != nil {
				return
			}
			flusher.Flush()
		}
	}
}
