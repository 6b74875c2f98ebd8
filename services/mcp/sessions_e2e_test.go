package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dmcp "deckhand/services/mcp"
)

// mcpPID is the pid of the mcp service, from its health record.
func (a *agent) mcpPID(t *testing.T) int {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(a.base+16) + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		PID int `json:"pid"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.PID == 0 {
		t.Fatalf("the mcp service's health: %+v %v", h, err)
	}
	return h.PID
}

// procStat reads a process's open fds and VmRSS (bytes) from /proc.
func procStat(t *testing.T, pid int) (fds int, rss uint64) {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			rss = kb * 1024
		}
	}
	return len(ents), rss
}

// TestSubscriptionsEndWithTheirSession: sessions subscribe to files of
// their own, each under three spellings (plain, ./, #fragment), up to the
// per-session cap; one more is a JSON-RPC error naming the cap. Sessions
// end with DELETE, the last by going idle. The mcp service runs as its own
// process (--isolate mcp), so each watch it holds is a connection to the
// files service, an fd counted exactly: one per file, however spelled,
// while a session lasts, and after a first session (the baseline) three
// more leave its fds as they were and its RSS within 10 %. A write is told
// under each spelling.
func TestSubscriptionsEndWithTheirSession(t *testing.T) {
	t.Parallel()
	const files, perSession = 40, 120 // three spellings of each file
	a := startAgent(t, "files,mcp", "--isolate", "mcp", "--mcp-max-subscriptions", strconv.Itoa(perSession), "--mcp-session-idle", "3s")
	pid := a.mcpPID(t)
	dir := t.TempDir()
	for i := range 4 * files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	name := func(round, i int) string { return fmt.Sprintf("f%d", round*files+i) }
	var baseFDs int
	var baseRSS uint64
	stat := func(what string, ok func(fds int, rss uint64) bool) (int, uint64) {
		t.Helper()
		var fds int
		var rss uint64
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
			fds, rss = procStat(t, pid)
			if ok(fds, rss) {
				return fds, rss
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d fds, %d KiB RSS (baseline %d fds, %d KiB)", what, fds, rss>>10, baseFDs, baseRSS>>10)
			}
		}
	}
	for round := range 4 {
		updated := make(chan string, 64)
		opts := &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- r.Params.URI:
			default:
			}
		}}
		tr := &http.Transport{Proxy: nil}
		var rt http.RoundTripper = keyed{key: allKey, next: tr}
		if round == 3 {
			rt = dmcp.LeaveWithoutDelete{Next: rt}
		}
		s, err := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, opts).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: a.endpoint(), HTTPClient: &http.Client{Transport: rt}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := range files {
			f := name(round, i)
			for _, uri := range []string{"file://" + filepath.Join(dir, f), "file://" + dir + "/./" + f,
				"file://" + filepath.Join(dir, f) + "#" + strconv.Itoa(i)} {
				if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
					t.Fatalf("round %d, subscription %d (%s): %v", round, n+1, uri, err)
				}
				n++
			}
		}
		// The same URI again is the same subscription, not a new one.
		if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: "file://" + filepath.Join(dir, name(round, 0))}); err != nil {
			t.Fatalf("a repeated subscription: %v", err)
		}
		// One more is refused, naming the cap.
		err = s.Subscribe(ctx, &mcp.SubscribeParams{URI: "file://" + dir + "/.//" + name(round, 1)})
		if err == nil || !strings.Contains(err.Error(), "--mcp-max-subscriptions") || !strings.Contains(err.Error(), strconv.Itoa(perSession)) {
			t.Fatalf("subscription %d past the cap: %v", perSession+1, err)
		}

		// A write is told under every spelling subscribed.
		f := name(round, 7)
		if err := os.WriteFile(filepath.Join(dir, f), []byte("changed"), 0o644); err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"file://" + filepath.Join(dir, f): true, "file://" + dir + "/./" + f: true,
			"file://" + filepath.Join(dir, f) + "#7": true}
		for len(want) > 0 {
			select {
			case uri := <-updated:
				delete(want, uri)
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: no resources/updated for %v", round, want)
			}
		}
		fds, rss := procStat(t, pid)
		t.Logf("round %d with %d subscriptions: %d fds, %d KiB RSS", round, n, fds, rss>>10)
		if round > 0 && fds < baseFDs+files {
			t.Fatalf("round %d: %d fds with %d files watched, baseline %d: the watches are not connections to count", round, fds, files, baseFDs)
		}
		if round > 0 && fds > baseFDs+files+8 {
			t.Fatalf("round %d: %d fds for %d files under three spellings, baseline %d: more than one watch per file", round, fds, files, baseFDs)
		}
		_ = s.Close() // the last round's DELETE fails: the idle timeout ends it
		tr.CloseIdleConnections()
		if round == 0 {
			// The baseline: once the first session's watches are gone
			// the fd count stops falling.
			last := -1
			baseFDs, baseRSS = stat("baseline", func(fds int, _ uint64) bool {
				stable := fds == last
				last = fds
				return stable
			})
		}
	}
	fds, rss := stat("after the sessions ended", func(fds int, rss uint64) bool {
		return fds <= baseFDs && float64(rss) <= 1.1*float64(baseRSS)
	})
	t.Logf("baseline %d fds, %d KiB RSS; after three more sessions %d fds, %d KiB RSS (within 10 %%)", baseFDs, baseRSS>>10, fds, rss>>10)
}

// TestSessionBoundToItsCredential: a session opened with one token is not
// there for another: its POST, GET and DELETE with the session's id answer
// 404 as for an unknown session, and the session goes on working for its
// own token.
func TestSessionBoundToItsCredential(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "files,mcp")
	s := connect(t, a.endpoint(), allKey, nil)
	id := s.ID()
	if id == "" {
		t.Fatal("no session id")
	}
	do := func(method, key, session, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, a.endpoint(), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		req.Header.Set("X-Key", key)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return resp.StatusCode, string(raw)
	}
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	unknownStatus, unknownBody := do("POST", allKey, "no-such-session", list)
	if unknownStatus != 404 {
		t.Fatalf("an unknown session: %d %s", unknownStatus, unknownBody)
	}
	for _, method := range []string{"POST", "GET", "DELETE"} {
		body := ""
		if method == "POST" {
			body = list
		}
		if st, raw := do(method, noExecKey, id, body); st != unknownStatus || raw != unknownBody {
			t.Errorf("%s of another credential's session: %d %q, want %d %q as for an unknown one", method, st, raw, unknownStatus, unknownBody)
		}
	}
	// Its own token still has it, tools and all.
	if res := callTool(t, s, "mcp_ping", map[string]any{}); text(res) != "pong" {
		t.Fatalf("the session after another credential's attempts: %q", text(res))
	}
	if st, raw := do("POST", allKey, id, list); st != 200 {
		t.Fatalf("its own token: %d %s", st, raw)
	}
}
