package access_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/agent"
	"deckhand/agent/access"
	"deckhand/agent/gateway"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// journal records entries.
type journal struct {
	mu sync.Mutex
	e  []contract.JournalEntry
}

func (j *journal) Record(e contract.JournalEntry) { j.mu.Lock(); j.e = append(j.e, e); j.mu.Unlock() }

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

// request is a request from a peer; a loopback one is a trusted local
// user's (the gateway reads that from the socket's owner).
func request(from string, hdr map[string]string) gateway.Request {
	ip := net.ParseIP(from)
	return gateway.Request{Method: "GET", Path: "/_/cron/health", RemoteIP: ip,
		Header: func(n string) string { return hdr[n] }, TrustedPeer: ip.IsLoopback}
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
		Port: func(s string) int { return map[string]int{"vault": 7705, "terminal": 7703}[s] }})
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
		{"vault", "203.0.113.1", key, 200},
		{"vault", "203.0.113.1", nil, 401},
		{"vault", "127.0.0.1", nil, 401},
		{"terminal", "203.0.113.1", basic, 200}, // plaintext in a local file is hashed on load
		{"terminal", "203.0.113.1", key, 403},
		{"vault", "203.0.113.1", basic, 403},
	} {
		if got := status(a, c.service, c.from, c.hdr); got != c.want {
			t.Fatalf("%s from %s %v: %d, want %d", c.service, c.from, c.hdr, got, c.want)
		}
	}
	// A change applies.
	if err := os.WriteFile(path, []byte(fileDoc("k2", "true")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return status(a, "vault", "203.0.113.1", map[string]string{"X-Key": "k2"}) == 200 })
	// A malformed version is refused whole: the previous one stays.
	for _, bad := range []string{`{"project":"p1","container":"c1","groups":{},"permissions":{"bots":{"services":"9-3"}}}`, `not json`,
		`{"project":"p1","container":"c1","groups":{"x":{"type":"ip","range":"10.0.0.0/33"}},"permissions":{}}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return strings.Contains(j.text(), "permissions file refused") })
		time.Sleep(60 * time.Millisecond)
		if got := status(a, "vault", "203.0.113.1", map[string]string{"X-Key": "k2"}); got != 200 {
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
	// Nor is a local user the agent does not trust.
	r = request("127.0.0.1", nil)
	r.TrustedPeer = func() bool { return false }
	if _, err := a.Authorize(r, gateway.Target{Service: "cron"}); err == nil || err.Status() != 403 {
		t.Fatalf("an untrusted local user passed as loopback: %v", err)
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

// TestTunnelRulesJudgeTheTunnelledPort: through the tunnel service the
// program is ssh for port 22 and http for any other, and a rule's ports
// are matched against the tunnelled port (the {port} of /proxy/{port}/ or
// the port of the WebSocket route), never the tunnel service's own port.
// The tunnel's other routes are the services program. The decision names
// the port it admitted, which the gateway hands to the tunnel.
func TestTunnelRulesJudgeTheTunnelledPort(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "perm.json")
	doc := `{"project":"p1","container":"c1","default":"deny","groups":{
		"web":{"type":"token","header":"X-Web","value":"w"},
		"wide":{"type":"token","header":"X-Wide","value":"v"},
		"shell":{"type":"token","header":"X-Ssh","value":"s"},
		"admin":{"type":"token","header":"X-Admin","value":"a"}},
		"permissions":{"web":{"http":[3000]},"wide":{"http":true,"ssh":false},"shell":{"ssh":true},"admin":{"services":true}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := access.New(access.Config{PermissionsFile: path, Journal: &journal{}, Logger: quietLog(),
		Port: func(s string) int { return map[string]int{"tunnel": 7706, "cron": 7701}[s] }})
	if err != nil {
		t.Fatal(err)
	}
	web, wide, shell, admin := map[string]string{"X-Web": "w"}, map[string]string{"X-Wide": "v"},
		map[string]string{"X-Ssh": "s"}, map[string]string{"X-Admin": "a"}
	for _, c := range []struct {
		name     string
		path     string
		query    string // the WebSocket route's port
		hdr      map[string]string
		want     int
		wantPort int // the port the decision admitted
	}{
		{"http [3000] reaches 3000", "/proxy/3000/", "", web, 200, 3000},
		{"http [3000] reaches 3000 deep", "/proxy/3000/a/b", "", web, 200, 3000},
		{"http [3000] not 3001", "/proxy/3001/", "", web, 403, 0},
		{"http [3000] not the tunnel's own port", "/proxy/7706/", "", web, 403, 0},
		{"http [3000] ws 3000", "/api/v1/tunnel/ws", "3000", web, 200, 3000},
		{"http [3000] ws 22", "/api/v1/tunnel/ws", "22", web, 403, 0},
		{"ssh false stops /proxy/22", "/proxy/22/", "", wide, 403, 0},
		{"ssh false stops ws 22", "/api/v1/tunnel/ws", "22", wide, 403, 0},
		{"ssh false, escaped 22", "/proxy/%32%32/", "", wide, 403, 0},
		{"http true reaches 8080", "/proxy/8080/x", "", wide, 200, 8080},
		{"ssh true reaches 22", "/api/v1/tunnel/ws", "22", shell, 200, 22},
		{"ssh true is not http", "/proxy/3000/", "", shell, 403, 0},
		{"tunnel routes are services", "/api/v1/tunnel/sessions", "", admin, 200, 7706},
		{"http is not the tunnel's routes", "/api/v1/tunnel/bindings", "", wide, 403, 0},
		{"routing ignores case and a trailing slash", "/API/v1/Tunnel/WS/", "22", wide, 403, 0},
		{"services is no tunnel", "/proxy/3000/", "", admin, 403, 0},
	} {
		r := gateway.Request{Method: "GET", Path: "/_/tunnel" + c.path, RemoteIP: net.ParseIP("203.0.113.9"),
			Header: func(n string) string { return c.hdr[n] },
			Query: func(n string) string {
				if n == "port" {
					return c.query
				}
				return ""
			}}
		id, perr := a.Authorize(r, gateway.Target{Service: "tunnel", Instance: 1, Path: c.path})
		got := 200
		if perr != nil {
			got = perr.Status()
		}
		if got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
			continue
		}
		if perr == nil && id.Port != c.wantPort {
			t.Errorf("%s: admitted port %d, want %d", c.name, id.Port, c.wantPort)
		}
	}
}

// TestReachOfAnActingService: for a service that calls others for its
// caller (the mcp service), the decision also lists which of those the
// same credential reaches, each judged as its own program (driving the
// display, "desktop", as program desktop); other services get no list.
func TestReachOfAnActingService(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "perm.json")
	doc := `{"project":"p1","container":"c1","enable_proxy":true,"groups":{
		"all":{"type":"token","header":"X-Key","value":"a"},
		"files":{"type":"token","header":"X-Key","value":"f"}},
		"permissions":{"all":{"exec":true,"files":true,"services":true,"desktop":true},"files":{"files":true,"services":true}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := access.New(access.Config{PermissionsFile: path, Journal: &journal{}, Logger: quietLog(),
		Port: func(s string) int { return agent.Port(7700, s) }, ActsFor: agent.ActsFor(), ToolList: agent.ToolList})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, service string
		want         []string
	}{
		{"a", "mcp", []string{"mcp", "process", "files", "display", "desktop", "journal", "notes", "workspace", "tunnel", "vault"}},
		{"f", "mcp", []string{"mcp", "files", "display", "journal", "notes", "workspace", "tunnel", "vault"}},
		{"a", "files", nil},
	} {
		id, perr := a.Authorize(request("10.0.0.9", map[string]string{"X-Key": c.key}), gateway.Target{Service: c.service})
		if perr != nil {
			t.Fatalf("key %s to %s: %v", c.key, c.service, perr)
		}
		if !reflect.DeepEqual(id.Reach, c.want) {
			t.Errorf("key %s to %s: reach %v, want %v", c.key, c.service, id.Reach, c.want)
		}
	}
}

// TestToolListOfTheMCPService: a request to the mcp service carries the
// caller's tool allow-list (mcp_tools of the groups that admit it); a
// group without one carries none, and a listed group reaches no other
// service directly.
func TestToolListOfTheMCPService(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "perm.json")
	doc := `{"project":"p1","container":"c1","enable_proxy":true,"groups":{
		"all":{"type":"token","header":"X-Key","value":"a"},
		"files":{"type":"token","header":"X-Key","value":"f","mcp_tools":["files_*","mcp_ping"]}},
		"permissions":{"all":{"exec":true,"files":true,"services":true},"files":{"exec":true,"files":true,"services":true}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	j := &journal{}
	a, err := access.New(access.Config{PermissionsFile: path, Journal: j, Logger: quietLog(),
		Port: func(s string) int { return agent.Port(7700, s) }, ActsFor: agent.ActsFor(), ToolList: agent.ToolList})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, service string
		want         []string
	}{
		{"f", "mcp", []string{"files_*", "mcp_ping"}},
		{"a", "mcp", nil},
		{"a", "files", nil},
	} {
		id, perr := a.Authorize(request("10.0.0.9", map[string]string{"X-Key": c.key}), gateway.Target{Service: c.service})
		if perr != nil {
			t.Fatalf("key %s to %s: %v", c.key, c.service, perr)
		}
		if !reflect.DeepEqual(id.Tools, c.want) {
			t.Errorf("key %s to %s: tools %#v, want %#v", c.key, c.service, id.Tools, c.want)
		}
	}
	// The listed group admits the mcp service only: its files and exec
	// grants act through the tools, never on a direct request.
	for _, service := range []string{"files", "process", "notes"} {
		if _, perr := a.Authorize(request("10.0.0.9", map[string]string{"X-Key": "f"}), gateway.Target{Service: service}); perr == nil || perr.Code != fault.CodeForbidden {
			t.Errorf("the listed group straight to %s: %v, want FORBIDDEN", service, perr)
		}
	}
	if !strings.Contains(j.text(), "mcp_tools:[files_* mcp_ping]") {
		t.Errorf("the decision's journal entry lacks the allow-list: %s", j.text())
	}
}

// TestDisplayInputIsDesktop: a services grant reads the display (a
// screenshot, the takeover view in mode view) but its input and the
// takeover in mode control are refused; a desktop grant drives it.
func TestDisplayInputIsDesktop(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "perm.json")
	doc := `{"project":"p1","container":"c1","enable_proxy":true,"groups":{
		"svc":{"type":"token","header":"X-Key","value":"s"},
		"desk":{"type":"token","header":"X-Key","value":"d"}},
		"permissions":{"svc":{"services":true},"desk":{"desktop":true}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := access.New(access.Config{PermissionsFile: path, Journal: &journal{}, Logger: quietLog(),
		Port: func(s string) int { return agent.Port(7700, s) }, ActsFor: agent.ActsFor(), ToolList: agent.ToolList})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path, mode string
		svc, desk          bool
	}{
		{"GET", "/api/v1/display/screenshots", "", true, false},
		{"GET", "/api/v1/display/vnc/", "view", true, false},
		{"GET", "/api/v1/display/vnc/websockify", "view", true, false},
		{"GET", "/api/v1/display/vnc/", "", false, true},
		{"GET", "/api/v1/display/vnc/websockify", "control", false, true},
		{"POST", "/api/v1/display/keyboard/type", "", false, true},
		{"POST", "/api/v1/display/mouse/click", "", false, true},
		{"POST", "/api/v1/display/accessibility/e1/click", "", false, true},
		{"POST", "/api/v1/display/input/batch", "", false, true},
	} {
		for key, want := range map[string]bool{"s": c.svc, "d": c.desk} {
			r := request("10.0.0.9", map[string]string{"X-Key": key})
			r.Method = c.method
			r.Query = func(n string) string {
				if n == "mode" {
					return c.mode
				}
				return ""
			}
			_, perr := a.Authorize(r, gateway.Target{Service: "display", Path: c.path})
			if (perr == nil) != want {
				t.Errorf("key %s, %s %s mode %q: %v, want allowed %v", key, c.method, c.path, c.mode, perr, want)
			}
		}
	}
}
