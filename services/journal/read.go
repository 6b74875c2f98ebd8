package journal

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// Stats answers the journal's statistics.
func (s *Service) Stats(context.Context) (Stats, error) {
	st, err := s.stats()
	if err != nil {
		return Stats{}, err
	}
	st.Pending = s.pendingCount()
	st.Dropped += s.droppedCount()
	st.MaxBytes, st.MaxAgeSeconds = s.set.MaxBytes, int64(s.set.MaxAge/time.Second)
	st.FileBytes = s.fileBytes()
	return st, nil
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
	return nil, fault.Invalid(name, "must be an RFC 3339 time (2026-01-02T15:04:05Z) or a duration back from now (-15m)")
}

// ReadRequest is GET /api/v1/journal.
type ReadRequest struct {
	Source      string `query:"source" doc:"only entries of these sources (comma list: agent, cron, a program id ...)"`
	Level       string `query:"level" enum:"debug,info,warn,error" doc:"only this level and more severe ones"`
	Since       string `query:"since" doc:"only entries at or after: RFC 3339 time, or a duration back from now (-15m, 2h)"`
	Until       string `query:"until" doc:"only entries at or before: RFC 3339 time, or a duration back from now"`
	Text        string `query:"text" doc:"only messages containing this (case-insensitive)"`
	Regex       string `query:"regex" doc:"only messages matching this RE2 regular expression ((?i) for case-insensitive), at most 1024 characters"`
	Cursor      string `query:"cursor" doc:"resume after this position (an entry's cursor or X-Journal-Cursor)"`
	Reverse     bool   `query:"reverse" default:"false" doc:"newest first; with cursor, the entries before it"`
	Limit       int    `query:"limit" minimum:"1" maximum:"10000" default:"100" doc:"at most this many entries (follow: in the first page)"`
	Format      string `query:"format" enum:"json,short" default:"json" doc:"JSON lines or short text"`
	Follow      bool   `query:"follow" default:"false" doc:"stay open and stream new entries as Server-Sent Events"`
	LastEventID string `header:"Last-Event-ID" doc:"follow: resume after this cursor (EventSource sends it on reconnect)"`
}

// queryOf builds the read the request asks for.
func (s *Service) queryOf(p ReadRequest) (Query, error) {
	q := Query{Cursor: p.Cursor, Reverse: p.Reverse, Limit: p.Limit}
	if p.LastEventID != "" {
		q.Cursor = p.LastEventID
	}
	for _, src := range strings.Split(p.Source, ",") {
		if src = strings.TrimSpace(src); src != "" {
			q.Sources = append(q.Sources, src)
		}
	}
	if lv := p.Level; lv != "" {
		q.MinLevel = int(levelOf(lv))
	}
	now := s.clock.Now()
	var err error
	if q.Since, err = parseTime("since", p.Since, now); err != nil {
		return q, err
	}
	if q.Until, err = parseTime("until", p.Until, now); err != nil {
		return q, err
	}
	if q.Since != nil && q.Until != nil && q.Until.Before(*q.Since) {
		return q, fault.Invalid("until", "must not be before since")
	}
	q.Text = p.Text
	if re := p.Regex; re != "" {
		if len(re) > 1024 {
			return q, fault.Invalid("regex", "must be at most 1024 characters")
		}
		if q.Regex, err = regexp.Compile(re); err != nil {
			return q, fault.Invalid("regex", "is not an RE2 regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	if q.Reverse && p.Follow {
		return q, fault.Invalid("reverse", "cannot be combined with follow")
	}
	return q, nil
}

func (s *Service) serveRead(w http.ResponseWriter, r *http.Request, p ReadRequest) {
	q, err := s.queryOf(p)
	if err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	short := p.Format == "short"
	if p.Follow {
		s.follow(w, r, q, short)
		return
	}
	page, err := s.Read(q)
	if err != nil {
		reqpolicy.WriteHTTPError(w, err)
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
		reqpolicy.WriteHTTPError(w, fault.Errorf(fault.CodeInternal, "streaming is not supported here"))
		return
	}
	// Read the request's Done channel once, before the response starts:
	// fasthttp resets it at shutdown without synchronization.
	gone := r.Context().Done()
	snap, changed := s.current()
	page, err := s.read(q, snap)
	if err != nil {
		reqpolicy.WriteHTTPError(w, err)
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
