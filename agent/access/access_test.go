package access_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/agent/access"
	"deckhand/agent/gateway"
	"deckhand/platform"
)

// journal records entries.
type journal struct {
	mu sync.Mutex
	e  []platform.JournalEntry
}

func (j *journal) Record(e platform.JournalEntry) { j.mu.Lock(); j.e = append(j.e, e); j.mu.Unlock() }

func (j *journal) text() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return fmt.Sprint(j.e)
}

func fileDoc(value string, access string) string {
	return `{"project":"p1","container":"c1","groups":{"bots":{"type":"token","header":"X-Key","value":"` + value + `"},
		"ops":{"type":"password","username":"op","password":"plain-secret-pw"}},
		"permissions":{"bots":{"services":` + access + `},"ops":{"terminal":true}}}`
}

func request(from string, hdr map[string]string) gateway.Request {
	return gateway.Request{Method: "GET", Path: "/_/cron/health", RemoteIP: net.ParseIP(from),
		Header: func(n string) string { return hdr[n] }}
}

func status(a *access.Authorizer, service, from string, hdr map[string]string) int {
	_, err := a.Authorize(request(from, hdr), gateway.Target{Service: service})
	if err == nil {
		return 200
	}
	return err.Status()
}

func TestPermissionsFileReloadsAndRefusesMalformedWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "perm.json")
	j := &journal{}
	// Malformed at start: the agent does not start.
	if err := os.WriteFile(path, []byte(`{"project":"p1"`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := access.New(access.Config{PermissionsFile: path, Journal: j}); err == nil || !strings.Contains(err.Error(), "--permissions-file") {
		t.Fatalf("malformed file at start: %v", err)
	}
	if err := os.WriteFile(path, []byte(fileDoc("k1", "true")), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := access.New(access.Config{PermissionsFile: path, Journal: j, Poll: 20 * time.Millisecond,
		Port: func(s string) int { return map[string]int{"cron": 7701, "terminal": 7703}[s] }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	key := map[string]string{"X-Key": "k1"}
	basic := map[string]string{"Authorization": "Basic b3A6cGxhaW4tc2VjcmV0LXB3"} // op:plain-secret-pw
	for _, c := range []struct {
		service, from string
		hdr           map[string]string
		want          int
	}{
		{"cron", "203.0.113.1", key, 200},
		{"cron", "203.0.113.1", nil, 401},
		{"cron", "127.0.0.1", nil, 401},
		{"terminal", "203.0.113.1", basic, 200}, // plaintext in a local file is hashed on load
		{"terminal", "203.0.113.1", key, 403},
		{"cron", "203.0.113.1", basic, 403},
	} {
		if got := status(a, c.service, c.from, c.hdr); got != c.want {
			t.Fatalf("%s from %s %v: %d, want %d", c.service, c.from, c.hdr, got, c.want)
		}
	}
	// A change applies.
	if err := os.WriteFile(path, []byte(fileDoc("k2", "true")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return status(a, "cron", "203.0.113.1", map[string]string{"X-Key": "k2"}) == 200 })
	// A malformed version is refused whole: the previous one stays.
	for _, bad := range []string{`{"project":"p1","container":"c1","groups":{},"permissions":{"bots":{"services":"9-3"}}}`, `not json`,
		`{"project":"p1","container":"c1","groups":{"x":{"type":"ip","range":"10.0.0.0/33"}},"permissions":{}}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return strings.Contains(j.text(), "permissions file refused") })
		time.Sleep(60 * time.Millisecond)
		if got := status(a, "cron", "203.0.113.1", map[string]string{"X-Key": "k2"}); got != 200 {
			t.Fatalf("after a malformed file (%s): %d", bad, got)
		}
	}
	// Decisions reach the journal with the group, never a credential.
	txt := j.text()
	if !strings.Contains(txt, "proxy decision") || !strings.Contains(txt, "group:bots") {
		t.Fatalf("journal: %s", txt)
	}
	for _, secret := range []string{"k1", "k2", "plain-secret-pw", "b3A6"} {
		if strings.Contains(txt, secret) {
			t.Fatalf("journal carries %q: %s", secret, txt)
		}
	}
}

func TestNoDocumentLoopbackOnly(t *testing.T) {
	t.Parallel()
	a, err := access.New(access.Config{Journal: &journal{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := status(a, "cron", "127.0.0.1", nil); got != 200 {
		t.Fatalf("loopback: %d", got)
	}
	if got := status(a, "cron", "10.0.0.1", nil); got != 403 {
		t.Fatalf("outside: %d", got)
	}
	// A loopback peer relaying another client (trusted proxy) is not loopback.
	r := request("127.0.0.1", nil)
	r.Source = net.ParseIP("203.0.113.7")
	if _, err := a.Authorize(r, gateway.Target{Service: "cron"}); err == nil {
		t.Fatal("a proxied outside client passed as loopback")
	}
}

func TestControlFlagsChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  access.Config
		want string
	}{
		{access.Config{ControlURL: "http://x", Token: "agt_1"}, "--container-id"},
		{access.Config{ControlURL: "http://x", ContainerID: "c1"}, "--token"},
		{access.Config{ControlURL: "http://x", ContainerID: "c1", Token: "svc_1"}, "agent token (agt_"},
		{access.Config{ControlURL: "ftp://x", ContainerID: "c1", Token: "agt_1"}, "--control-url"},
	} {
		if _, err := access.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %s", c.cfg, err, c.want)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
