package proxy_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"deckhand/control/proxy"
)

// signalling is a catalog that signals its changes, as the control
// plane's does, and counts its reads.
type signalling struct {
	*catalog
	mu    sync.Mutex
	finds int
	subs  map[string][]chan struct{}
}

func (s *signalling) Find(ctx context.Context, prefix, server string) (proxy.Container, error) {
	s.mu.Lock()
	s.finds++
	s.mu.Unlock()
	return s.catalog.Find(ctx, prefix, server)
}

func (s *signalling) Changed(id string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{}, 1)
	s.subs[id] = append(s.subs[id], ch)
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, o := range s.subs[id] {
			if o == ch {
				s.subs[id] = append(s.subs[id][:i], s.subs[id][i+1:]...)
				break
			}
		}
	}
}

// change edits container id's record and signals it.
func (s *signalling) change(id string, edit func(*proxy.Container)) {
	s.catalog.mu.Lock()
	edit(s.catalog.byID[id])
	s.catalog.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (s *signalling) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finds
}

// A running container's record is read once for many requests, and read
// again as soon as it changes: a stop, a move to another agent, a delete
// take effect on the next request.
func TestKeepsRunningContainersUntilTheyChange(t *testing.T) {
	a := agent(t, "proj", "ctr1")
	b := agent(t, "proj", "ctr1") // the same container restarted elsewhere
	cat := &signalling{catalog: &catalog{byID: map[string]*proxy.Container{
		"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running", Addr: a},
		"ctr2": {ID: "ctr2", ProjectID: "proj", Status: "stopped"},
	}}, subs: map[string][]chan struct{}{}}
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test"}, cat))
	get := func(host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+px+"/api/v1/files/stat?path=/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	const host = "proj-ctr1-files-1.local.deckhand.test"
	for i := 0; i < 20; i++ {
		if code, body := get(host); code != 200 {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	if n := cat.reads(); n != 1 {
		t.Fatalf("20 requests to a running container read its record %d times, want 1", n)
	}
	// Another container's Host is its own lookup, never the kept one.
	if code, body := get("proj-ctr2-files-1.local.deckhand.test"); code != 503 || !strings.Contains(body, "ctr2 is stopped") {
		t.Fatalf("a stopped container beside a kept one: %d %s", code, body)
	}

	// Moved: the next request goes to the new address, first one where
	// nothing answers, then the agent's new one.
	cat.change("ctr1", func(c *proxy.Container) { c.Addr = "127.0.0.1:1" })
	if code, body := get(host); code != 502 {
		t.Fatalf("after a move to where nothing answers: %d %s", code, body)
	}
	cat.change("ctr1", func(c *proxy.Container) { c.Addr = b })
	if code, body := get(host); code != 200 {
		t.Fatalf("after the move: %d %s", code, body)
	}
	// Stopped with autostart off: 503 at once, not the kept answer.
	cat.change("ctr1", func(c *proxy.Container) { c.Status, c.Addr = "stopped", "" })
	if code, body := get(host); code != 503 || !strings.Contains(body, "is stopped") {
		t.Fatalf("the request after the stop: %d %s", code, body)
	}
	// Deleted: 404 at once.
	cat.change("ctr1", func(c *proxy.Container) { c.Status, c.Addr = "running", a })
	if code, _ := get(host); code != 200 {
		t.Fatalf("running again: %d", code)
	}
	cat.change("ctr1", func(c *proxy.Container) { delete(cat.catalog.byID, "ctr1") })
	if code, body := get(host); code != 404 {
		t.Fatalf("the request after the delete: %d %s", code, body)
	}
}
