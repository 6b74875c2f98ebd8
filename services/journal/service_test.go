package journal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/journal"
)

type fixture struct {
	svc  *journal.Service
	sink *journal.Sink
	h    *platform.Host
	deps contract.ServiceDeps
}

func newJournal(t testing.TB, set *journal.Settings, clock clockpkg.Clock) *fixture {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "journal")
	if clock != nil {
		deps.Clock = clock
	}
	sink := journal.NewSink(journal.SinkConfig{Logger: deps.Logger})
	t.Cleanup(func() { _ = sink.Close() })
	deps.Journal = sink
	if set == nil {
		set = &journal.Settings{MaxBytes: 64 << 20}
	}
	svc, err := journal.New(deps, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return &fixture{svc: svc, sink: sink, h: platformtest.ServiceHost(t, svc), deps: deps}
}

func (f *fixture) call(t testing.TB, method, target string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req := platformtest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	// A hang guard, not a timing assertion: the machine may be loaded.
	resp, err := f.h.App().Test(req, fiber.TestConfig{Timeout: 30 * time.Second, FailOnTimeout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), resp.Header
}

func (f *fixture) flush(t testing.TB) int {
	t.Helper()
	status, body, _ := f.call(t, "POST", "/api/v1/journal/flush")
	var out struct{ Written int }
	if status != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("flush: %d %s", status, body)
	}
	return out.Written
}

// read answers the entries of a JSON-lines read and the next cursor.
func (f *fixture) read(t testing.TB, query string) ([]journal.Entry, string) {
	t.Helper()
	status, body, hdr := f.call(t, "GET", "/api/v1/journal?"+query)
	if status != 200 {
		t.Fatalf("read %s: %d %s", query, status, body)
	}
	var out []journal.Entry
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if line == "" {
			continue
		}
		var e journal.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out, hdr.Get("X-Journal-Cursor")
}

func messages(es []journal.Entry) string {
	var m []string
	for _, e := range es {
		m = append(m, e.Message)
	}
	return strings.Join(m, ",")
}

func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	platformtest.CheckRoutesDocumented(t, newJournal(t, nil, nil).h)
}

func TestBadQueryParametersAreNamed(t *testing.T) {
	t.Parallel()
	if n := platformtest.CheckQueryValidation(t, newJournal(t, nil, nil).h); n == 0 {
		t.Fatal("journal declares no query parameters to check")
	}
}

func TestReadFiltersAndCursors(t *testing.T) {
	t.Parallel()
	f := newJournal(t, nil, nil)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		src, lv := "cron", "info"
		if i%2 == 1 {
			src = "daemon"
		}
		if i%3 == 0 {
			lv = "error"
		}
		f.sink.Record(contract.JournalEntry{Time: t0.Add(time.Duration(i) * time.Second), Source: src, Level: lv,
			Message: fmt.Sprintf("m%d", i), Fields: map[string]any{"i": i}})
	}
	if n := f.flush(t); n != 10 {
		t.Fatalf("flush wrote %d", n)
	}
	if n := f.flush(t); n != 0 {
		t.Fatalf("second flush wrote %d", n)
	}
	all, end := f.read(t, "")
	if messages(all) != "m0,m1,m2,m3,m4,m5,m6,m7,m8,m9" || all[3].Level != "error" || all[3].Fields["i"] != 3.0 {
		t.Fatalf("all: %+v", all)
	}
	if end != all[9].Cursor {
		t.Fatalf("end cursor %q, last entry %q", end, all[9].Cursor)
	}
	cases := map[string]string{
		"limit=3":                    "m7,m8,m9",
		"limit=3&reverse=true":       "m9,m8,m7",
		"source=daemon":              "m1,m3,m5,m7,m9",
		"source=daemon,cron&limit=2": "m8,m9",
		"level=error":                "m0,m3,m6,m9",
		"level=warn&source=cron":     "m0,m6",
		"text=M1":                    "m1",
		"regex=^m[2-4]$":             "m2,m3,m4",
		"since=2026-03-01T12:00:07Z": "m7,m8,m9",
		"until=2026-03-01T12:00:01Z": "m0,m1",
		"since=2026-03-01T12:00:02Z&until=2026-03-01T12:00:04Z": "m2,m3,m4",
		"cursor=" + all[4].Cursor:                               "m5,m6,m7,m8,m9",
		"cursor=" + all[4].Cursor + "&limit=2":                  "m5,m6",
		"cursor=" + all[4].Cursor + "&reverse=true":             "m3,m2,m1,m0",
		"cursor=" + all[4].Cursor + "&source=cron":              "m6,m8",
	}
	for q, want := range cases {
		if got, _ := f.read(t, q); messages(got) != want {
			t.Errorf("%s: got %s, want %s", q, messages(got), want)
		}
	}
	// Paging with the header cursor visits each entry once.
	var seen []string
	cur := ""
	for range 10 {
		page, next := f.read(t, "limit=3&cursor="+url.QueryEscape(cur)+"&since=2026-01-01T00:00:00Z")
		if len(page) == 0 {
			break
		}
		seen = append(seen, messages(page))
		cur = next
	}
	if strings.Join(seen, ",") != "m0,m1,m2,m3,m4,m5,m6,m7,m8,m9" {
		t.Fatalf("paging: %v", seen)
	}
	// Nothing after the end: the cursor stays.
	if got, next := f.read(t, "cursor="+end); len(got) != 0 || next != end {
		t.Fatalf("after end: %v %s", got, next)
	}
	status, body, _ := f.call(t, "GET", "/api/v1/journal?format=short&limit=1")
	if status != 200 || !strings.Contains(body, "daemon[error]: m9 i=9") {
		t.Fatalf("short: %d %q", status, body)
	}
	status, body, _ = f.call(t, "GET", "/api/v1/journal/stats")
	var st journal.Stats
	if status != 200 || json.Unmarshal([]byte(body), &st) != nil || st.Entries != 10 || st.BySource["cron"] != 5 ||
		st.ByLevel["error"] != 4 || st.ByLevel["info"] != 6 || st.Oldest == nil || !st.Oldest.Equal(t0) || st.Bytes <= 0 {
		t.Fatalf("stats: %d %s", status, body)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	f := newJournal(t, nil, nil)
	for q, field := range map[string]string{
		"cursor=nonsense":       "cursor",
		"regex=a(":              "regex",
		"since=yesterday":       "since",
		"until=12:00":           "until",
		"since=-1m&until=-2m":   "until",
		"reverse=true&follow=1": "reverse",
		"level=fatal":           "level",
		"format=xml":            "format",
	} {
		status, body, _ := f.call(t, "GET", "/api/v1/journal?"+q)
		var m map[string]any
		_ = json.Unmarshal([]byte(body), &m)
		if status != 400 || m["details"] != field || !strings.Contains(fmt.Sprint(m["message"]), field) {
			t.Errorf("%s: %d %s", q, status, body)
		}
	}
}

func TestRetentionBySize(t *testing.T) {
	t.Parallel()
	f := newJournal(t, &journal.Settings{MaxBytes: 1 << 20, MaxAge: 0}, nil)
	msg := strings.Repeat("x", 1000)
	for i := range 3000 {
		f.sink.Record(contract.JournalEntry{Source: "bulk", Message: fmt.Sprintf("%05d %s", i, msg)})
	}
	f.flush(t)
	var st journal.Stats
	_, body, _ := f.call(t, "GET", "/api/v1/journal/stats")
	_ = json.Unmarshal([]byte(body), &st)
	if st.Bytes > 1<<20 || st.Entries < 900 || st.Entries > 1100 || st.Removed != 3000-st.Entries || st.BySource["bulk"] != st.Entries {
		t.Fatalf("stats after 3 MB into 1 MiB: %s", body)
	}
	first, _ := f.read(t, "since=2000-01-01T00:00:00Z&limit=1")
	last, _ := f.read(t, "limit=1")
	if len(first) != 1 || !strings.HasPrefix(first[0].Message, fmt.Sprintf("%05d", 3000-st.Entries)) || !strings.HasPrefix(last[0].Message, "02999") {
		t.Fatalf("kept %d: first %v last %v", st.Entries, first, last)
	}
}

func TestRetentionByAgeAndGap(t *testing.T) {
	t.Parallel()
	clock := clockpkg.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	f := newJournal(t, &journal.Settings{MaxBytes: 64 << 20, MaxAge: time.Hour}, clock)
	f.sink.Record(contract.JournalEntry{Time: clock.Now(), Source: "a", Message: "old"})
	f.flush(t)
	old, _ := f.read(t, "")
	clock.Advance(2 * time.Hour)
	f.sink.Record(contract.JournalEntry{Time: clock.Now(), Source: "a", Message: "new"})
	f.flush(t)
	if got, _ := f.read(t, ""); messages(got) != "new" {
		t.Fatalf("after an hour: %s", messages(got))
	}
	status, body, hdr := f.call(t, "GET", "/api/v1/journal?cursor="+old[0].Cursor)
	if status != 200 || !strings.Contains(body, `"message":"new"`) || hdr.Get("X-Journal-Gap") != "" {
		// "old" was the last entry before the cut, so resuming after it misses nothing.
		t.Fatalf("resume after removed: %d %s %v", status, body, hdr)
	}
}

// TestFollowLiveAndResume: a follower over a real connection sees entries
// as a writer records them, is cut off, and resumes with Last-Event-ID
// exactly after the last entry it saw: nothing missed, nothing twice.
func TestFollowLiveAndResume(t *testing.T) {
	t.Parallel()
	f := newJournal(t, nil, nil)
	base := platformtest.Serve(t, f.h)
	f.sink.Record(contract.JournalEntry{Source: "prog", Message: "before"})
	f.sink.Record(contract.JournalEntry{Source: "other", Message: "noise"})
	f.flush(t)

	ctx, cancel := context.WithCancel(context.Background())
	ev := openSSE(t, ctx, base+"/api/v1/journal?follow=true&source=prog", "")
	if e := ev.next(t); e.Message != "before" {
		t.Fatalf("first page: %+v", e)
	}
	for i := range 5 {
		f.sink.Record(contract.JournalEntry{Source: "prog", Message: fmt.Sprintf("live%d", i)})
		f.sink.Record(contract.JournalEntry{Source: "other", Message: "noise"})
		if e := ev.next(t); e.Message != fmt.Sprintf("live%d", i) {
			t.Fatalf("live %d: %+v", i, e)
		}
	}
	last := ev.lastID
	cancel()
	// Written while nobody follows.
	for i := range 3 {
		f.sink.Record(contract.JournalEntry{Source: "prog", Message: fmt.Sprintf("gone%d", i)})
	}
	f.flush(t)
	ev = openSSE(t, context.Background(), base+"/api/v1/journal?follow=true&source=prog", last)
	for i := range 3 {
		if e := ev.next(t); e.Message != fmt.Sprintf("gone%d", i) {
			t.Fatalf("resumed %d: %+v", i, e)
		}
	}
	f.sink.Record(contract.JournalEntry{Source: "prog", Message: "after"})
	if e := ev.next(t); e.Message != "after" {
		t.Fatalf("after resume: %+v", e)
	}
	ev.close()
}

type sse struct {
	resp   *http.Response
	sc     *bufio.Scanner
	lastID string
	events chan journal.Entry
}

func openSSE(t *testing.T, ctx context.Context, url, lastID string) *sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("follow: %d %v", resp.StatusCode, resp.Header)
	}
	s := &sse{resp: resp, sc: bufio.NewScanner(resp.Body), events: make(chan journal.Entry, 100)}
	return s
}

// next reads events until the next entry (a 10 s hang guard).
func (s *sse) next(t *testing.T) journal.Entry {
	t.Helper()
	got := make(chan journal.Entry, 1)
	go func() {
		var event, data string
		for s.sc.Scan() {
			line := s.sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				s.lastID = line[4:]
			case strings.HasPrefix(line, "event: "):
				event = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			case line == "" && event == "entry":
				var e journal.Entry
				_ = json.Unmarshal([]byte(data), &e)
				got <- e
				return
			case line == "":
				event, data = "", ""
			}
		}
		close(got)
	}()
	select {
	case e, ok := <-got:
		if !ok {
			t.Fatal("stream ended")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no entry within 10 s")
	}
	return journal.Entry{}
}

func (s *sse) close() { s.resp.Body.Close() }

// TestSinkThroughSocket: a sink in another part of the agent (not
// attached) delivers through the ingest socket, buffering while the
// journal is not up yet.
func TestSinkThroughSocket(t *testing.T) {
	t.Parallel()
	deps := platformtest.ServiceDeps(t, "journal")
	data := strings.TrimSuffix(deps.DataDir, "") // the test's data dir stands for <data>/journal
	sock := journal.SocketPath(data + "/..")
	remote := journal.NewSink(journal.SinkConfig{Socket: sock, Capacity: 10})
	defer remote.Close()
	for i := range 15 {
		remote.Record(contract.JournalEntry{Source: "child", Message: fmt.Sprintf("early%d", i)})
	}
	if remote.Dropped() != 5 {
		t.Fatalf("dropped %d, want 5", remote.Dropped())
	}
	svc, err := journal.New(deps, &journal.Settings{MaxBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	f := &fixture{svc: svc, h: platformtest.ServiceHost(t, svc)}
	waitFor := func(n int) []journal.Entry {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			f.flush(t)
			if got, _ := f.read(t, "limit=100"); len(got) >= n {
				return got
			}
			time.Sleep(20 * time.Millisecond)
		}
		got, _ := f.read(t, "limit=100")
		t.Fatalf("entries through the socket: %s", messages(got))
		return nil
	}
	got := waitFor(11)
	if messages(got) != "early0,early1,early2,early3,early4,early5,early6,early7,early8,early9,5 journal entries were dropped: the writer's buffer was full" {
		t.Fatalf("through the socket: %s", messages(got))
	}
	// Entries in flight hold their place in the buffer until the journal
	// answers; wait for the sink to let go of them.
	for stop := time.Now().Add(10 * time.Second); remote.Buffered() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(stop) {
			t.Fatalf("sink still holds %d entries", remote.Buffered())
		}
	}
	remote.Record(contract.JournalEntry{Source: "child", Message: "late", Fields: map[string]any{"pid": 42}})
	got = waitFor(12)
	if got[11].Message != "late" || got[11].Source != "child" || got[11].Fields["pid"] != 42.0 {
		t.Fatalf("late: %+v", got[11])
	}
}

// TestTextFilter: the case-insensitive text filter finds messages whether
// the needle can be looked for in the stored JSON directly or not
// (characters JSON escapes, non-ASCII), and never matches field content.
func TestTextFilter(t *testing.T) {
	t.Parallel()
	f := newJournal(t, nil, nil)
	for _, m := range []string{"plain Needle here", `a <Tag> & "quoted" Über`, "line\nbreak"} {
		f.sink.Record(contract.JournalEntry{Source: "s", Message: m, Fields: map[string]any{"extra": "needle"}})
	}
	f.sink.Record(contract.JournalEntry{Source: "needle", Message: "nothing", Fields: map[string]any{"needle": "needle"}})
	f.flush(t)
	for text, want := range map[string]string{
		"NEEDLE":       "plain Needle here",
		"<tag> &":      `a <Tag> & "quoted" Über`,
		`"QUOTED"`:     `a <Tag> & "quoted" Über`,
		"über":         `a <Tag> & "quoted" Über`,
		"line\nbreak":  "line\nbreak",
		"absent-thing": "",
	} {
		got, _ := f.read(t, "text="+url.QueryEscape(text))
		if messages(got) != want {
			t.Errorf("text=%q: %q, want %q", text, messages(got), want)
		}
	}
}
