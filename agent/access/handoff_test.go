package access_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/agent/access"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/tokenseal"
)

// TestIdentityHandOver: a pooled agent (no project) takes a new token
// sealed under its token's hash and its container id: a hand-over sealed
// for another container or under another token is refused and changes
// nothing; the one sealed for it is written over the token file, put in
// force and synced with before the answer, and the pool's token is not
// sent again; a second hand-over is refused, and so is any to an agent
// of a project.
func TestIdentityHandOver(t *testing.T) {
	t.Parallel()
	clock := clockpkg.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	var valid atomic.Value
	valid.Store("agt_pool")
	var seen sync.Map
	srv := tokenControl(t, clock, &valid, &seen)
	file := filepath.Join(t.TempDir(), "agent-token")
	if err := os.WriteFile(file, []byte("agt_pool\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	newAgent := func(project string) http.Handler {
		a, err := access.New(access.Config{ControlURL: srv.URL, ContainerID: "c1", ProjectID: project, Token: "agt_pool", TokenFile: file,
			Journal: &journal{}, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.SyncOnce(context.Background()); err != nil {
			t.Fatalf("with the pool's token: %v", err)
		}
		return a.IdentityHandler()
	}
	h := newAgent("")
	post := func(h http.Handler, method string, v any) (int, string) {
		raw, _ := json.Marshal(v)
		if s, ok := v.(string); ok {
			raw = []byte(s)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, tokenseal.Path, bytes.NewReader(raw)))
		return rec.Code, rec.Body.String()
	}
	seal := func(prev, container, token string) tokenseal.Sealed {
		s, err := tokenseal.Seal(tokenseal.Hash(prev), container, token)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	valid.Store("agt_claimed")
	tampered := seal("agt_pool", "c1", "agt_claimed")
	tampered.Box[0] ^= 1
	for _, tc := range []struct {
		name, method string
		body         any
		want         int
	}{
		{"another container's", "POST", seal("agt_pool", "c2", "agt_claimed"), 403},
		{"relabelled for this container", "POST", func() tokenseal.Sealed { s := seal("agt_pool", "c2", "agt_claimed"); s.ContainerID = "c1"; return s }(), 403},
		{"under another token", "POST", seal("agt_other", "c1", "agt_claimed"), 403},
		{"tampered", "POST", tampered, 403},
		{"not a hand-over", "POST", "{nope", 400},
		{"not an agent token", "POST", seal("agt_pool", "c1", "pat_claimed"), 400},
		{"a GET", "GET", "", 405},
	} {
		if code, body := post(h, tc.method, tc.body); code != tc.want {
			t.Fatalf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
		if raw, _ := os.ReadFile(file); string(raw) != "agt_pool\n" {
			t.Fatalf("%s: the token file holds %q", tc.name, raw)
		}
	}
	pool := func() int64 { n, _ := seen.Load("agt_pool"); return n.(*atomic.Int64).Load() }
	before := pool()
	if code, body := post(h, "POST", seal("agt_pool", "c1", "agt_claimed")); code != 200 {
		t.Fatalf("the hand-over sealed for it: %d %s", code, body)
	}
	if raw, _ := os.ReadFile(file); string(raw) != "agt_claimed\n" {
		t.Fatalf("after the hand-over the token file holds %q", raw)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o400 {
		t.Fatalf("the token file's mode: %v %v", fi.Mode(), err)
	}
	if n, ok := seen.Load("agt_claimed"); !ok || n.(*atomic.Int64).Load() != 1 {
		t.Fatal("the agent answered before it synced with its new token")
	}
	if pool() != before {
		t.Fatal("the pool's token was sent during the hand-over")
	}
	if code, _ := post(h, "POST", seal("agt_claimed", "c1", "agt_again")); code != 409 {
		t.Fatalf("a second hand-over: %d, want 409", code)
	}
	if raw, _ := os.ReadFile(file); string(raw) != "agt_claimed\n" {
		t.Fatalf("after a second hand-over the token file holds %q", raw)
	}

	// An agent of a project takes none.
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("agt_pool\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	valid.Store("agt_pool")
	if code, body := post(newAgent("p1"), "POST", seal("agt_pool", "c1", "agt_claimed")); code != 404 || !strings.Contains(body, "project") {
		t.Fatalf("a hand-over to an agent of a project: %d %s", code, body)
	}
}
