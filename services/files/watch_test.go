package files_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/services/files"
)

type sse struct {
	id    uint64
	event string
	data  string
}

// watchStream opens the watch stream and delivers its events.
func watchStream(t *testing.T, url string, hdr ...string) (<-chan sse, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("watch: %v %v", err, resp)
	}
	ch := make(chan sse, 100000)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.event != "" {
					ch <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, "id: "):
				cur.id, _ = strconv.ParseUint(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				cur.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[6:]
			}
		}
	}()
	return ch, cancel
}

func next(t *testing.T, ch <-chan sse) sse {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("stream ended")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return sse{}
}

// A client that reconnects with Last-Event-ID misses nothing: every event
// after its last one arrives, numbered without a gap, including those
// that happened while it was away (in a directory created meanwhile too).
func TestWatchReconnectMissesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base, _ := serve(t, files.Settings{Root: root})
	u := base + "/api/v1/files/watch?path=/&recursive=true"
	ch, stop := watchStream(t, u)
	if e := next(t, ch); e.event != "ready" {
		t.Fatalf("first event %+v", e)
	}
	seen := map[string]bool{}
	var last uint64
	take := func(ch <-chan sse, want func() bool) {
		for !want() {
			e := next(t, ch)
			if e.event == "lost" {
				t.Fatalf("lost: %s", e.data)
			}
			if e.id != last+1 && last != 0 {
				t.Fatalf("gap: %d after %d", e.id, last)
			}
			last = e.id
			var ev files.Event
			json.Unmarshal([]byte(e.data), &ev)
			if ev.Type == "create" {
				seen[ev.Path] = true
			}
		}
	}
	for i := range 5 {
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("a%d", i)), []byte("x"), 0o644))
	}
	take(ch, func() bool { return seen["/a4"] })
	stop()
	// Away: files, and a new directory with content.
	for i := range 5 {
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("b%d", i)), []byte("x"), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(root, "d", "e"), 0o755))
	time.Sleep(200 * time.Millisecond)
	must(t, os.WriteFile(filepath.Join(root, "d", "e", "f"), []byte("x"), 0o644))
	time.Sleep(200 * time.Millisecond)
	ch, stop = watchStream(t, u, "Last-Event-ID", strconv.FormatUint(last, 10))
	defer stop()
	if e := next(t, ch); e.event != "ready" {
		t.Fatalf("first event after reconnect %+v", e)
	}
	take(ch, func() bool {
		for _, p := range []string{"/b0", "/b1", "/b2", "/b3", "/b4", "/d", "/d/e/f"} {
			if !seen[p] {
				return false
			}
		}
		return true
	})
}

// A client whose last event fell out of the ring is told so explicitly.
func TestWatchSaysWhenEventsWereLost(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base, _ := serve(t, files.Settings{Root: root})
	u := base + "/api/v1/files/watch?path=/&recursive=true"
	ch, stop := watchStream(t, u)
	next(t, ch)
	for i := range 5000 {
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", i)), nil, 0o644))
	}
	var last uint64
	for last < 5000 {
		last = next(t, ch).id
	}
	stop()
	ch, stop = watchStream(t, u+"&since=1")
	defer stop()
	next(t, ch) // ready
	if e := next(t, ch); e.event != "lost" || !strings.Contains(e.data, "EVENTS_LOST") {
		t.Fatalf("want lost, got %+v", e)
	}
}
