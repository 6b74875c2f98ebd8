package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/files"
)

// offsets are the port offsets of the services these tests run, as the
// agent's registry declares them (contract.ServiceDeps.Offsets).
var offsets = map[string]int{"files": 2, "mcp": 16}

// withFiles runs a real files service on a loopback port and this
// service, which reaches it there, and answers this service and its MCP
// endpoint on a loopback port.
func withFiles(t *testing.T, set *Settings) (*Service, string) {
	t.Helper()
	fdeps := platformtest.ServiceDeps(t, "files")
	fsvc, err := files.New(fdeps, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fsvc.Close() })
	fh, err := contract.NewServiceHost(fsvc, fdeps)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(platformtest.Serve(t, fh))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	deps := platformtest.ServiceDeps(t, "mcp")
	deps.Offsets = offsets
	set.PortBase = p - offsets["files"]
	svc, err := New(deps, set)
	if err != nil {
		t.Fatal(err)
	}
	h, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc, platformtest.Serve(t, h) + Path
}

// LeaveWithoutDelete fails the DELETE that ends a session: the client
// vanishes and only the idle timeout ends it (the e2e tests use it too).
type LeaveWithoutDelete struct{ Next http.RoundTripper }

func (l LeaveWithoutDelete) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete {
		return nil, errors.New("this client leaves without DELETE")
	}
	return l.Next.RoundTrip(r)
}

// TestSubscriptionsEndWithTheSession counts exactly: a file subscribed
// under three spellings (plain, ./, #fragment) is one watch; one more
// subscription past the cap is a JSON-RPC error naming it; and when the
// sessions end (DELETE, or the idle timeout for one that vanished) every
// watch, session record and their goroutines are gone.
func TestSubscriptionsEndWithTheSession(t *testing.T) {
	// Not parallel: it counts this process's goroutines.
	const nfiles = 10
	set := Defaults()
	set.MaxSubscriptions = 3 * nfiles
	set.SessionIdle = 2 * time.Second
	svc, endpoint := withFiles(t, set)
	dir := t.TempDir()
	for i := range 3 * nfiles {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(rt http.RoundTripper) *mcp.ClientSession {
		t.Helper()
		s, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	idle := func() {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			sessions, watches, subs := svc.subs.counts()
			if sessions == 0 && watches == 0 && subs == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the sessions ended: %d sessions, %d watches, %d subscriptions kept", sessions, watches, subs)
			}
		}
	}
	// The baseline: after one session has come and gone.
	tr := &http.Transport{Proxy: nil}
	warm := connect(tr)
	if err := warm.Subscribe(ctx, &mcp.SubscribeParams{URI: "file://" + filepath.Join(dir, "f0")}); err != nil {
		t.Fatal(err)
	}
	_ = warm.Close()
	idle()
	tr.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	base := runtime.NumGoroutine()

	for round := range 3 {
		tr := &http.Transport{Proxy: nil}
		var rt http.RoundTripper = tr
		if round == 2 {
			rt = LeaveWithoutDelete{tr}
		}
		s := connect(rt)
		for i := range nfiles {
			f := filepath.Join(dir, "f"+strconv.Itoa(round*nfiles+i))
			for _, uri := range []string{"file://" + f, "file://" + filepath.Dir(f) + "/./" + filepath.Base(f), "file://" + f + "#" + strconv.Itoa(i)} {
				if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
					t.Fatalf("subscribe %s: %v", uri, err)
				}
			}
		}
		if sessions, watches, subs := svc.subs.counts(); sessions != 1 || watches != nfiles || subs != 3*nfiles {
			t.Fatalf("round %d: %d sessions, %d watches, %d subscriptions; want 1, %d (one per file), %d", round, sessions, watches, subs, nfiles, 3*nfiles)
		}
		err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: "file://" + dir + "//f" + strconv.Itoa(round*nfiles)})
		if err == nil || !strings.Contains(err.Error(), "--mcp-max-subscriptions") || !strings.Contains(err.Error(), fmt.Sprint(3*nfiles)) {
			t.Fatalf("a subscription past the cap: %v", err)
		}
		_ = s.Close()
		idle()
		tr.CloseIdleConnections()
	}
	// The files service's end of a watch stream notices the reader gone
	// when a write fails: the first keep-alive (15 s) after the connection
	// closed, or the one after; its server's idle workers go 10 s later.
	for deadline := time.Now().Add(75 * time.Second); runtime.NumGoroutine() > base+2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after the sessions, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
	}
}
