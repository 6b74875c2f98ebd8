package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/valyala/fasthttp"

	"deckhand/agent/gateway"
	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/platform/reqpolicy"
	"deckhand/services/cron"
	"deckhand/services/files"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixture is a gateway in front of the real cron and files services, a
// header-echo upstream and a WebSocket echo upstream (stand-ins until a
// WebSocket service is registered), and "terminal" pointing at a closed port.
type fixture struct {
	gw       *gateway.Gateway
	url      string
	filesURL string
}

func hostFor(name string, svc interface {
	contract.Service
	Info() platform.Info
}) *platform.Host {
	// The services get the gateway's policy, as the agent gives them.
	policy, _ := reqpolicy.NewRequestPolicy("example.test", nil)
	return platform.NewHost(platform.HostConfig{Info: svc.Info(), Logger: quiet, Policy: policy}, svc.Routes())
}

func newFixture(t testing.TB, project, container string, opts ...func(*gateway.Config)) *fixture {
	t.Helper()
	cronSvc, err := cron.New(platformtest.ServiceDeps(t, "cron"), nil)
	if err != nil {
		t.Fatal(err)
	}
	filesSvc, err := files.New(platformtest.ServiceDeps(t, "files"), &files.Settings{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cronSvc.Close(); _ = filesSvc.Close() })
	backends := map[string]string{
		"cron":  strings.TrimPrefix(platformtest.Serve(t, hostFor("cron", cronSvc)), "http://"),
		"files": strings.TrimPrefix(platformtest.Serve(t, hostFor("files", filesSvc)), "http://"),
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocket.IsWebSocketUpgrade(r) {
			c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				mt, msg, err := c.ReadMessage()
				if err != nil {
					return
				}
				_ = c.WriteMessage(mt, append([]byte("echo:"), msg...))
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]string{
			"path": r.URL.Path, "raw_path": r.URL.RawPath, "query": r.URL.RawQuery,
			"prefix": r.Header.Get("X-Forwarded-Prefix"), "origin": r.Header.Get("Origin"), "conn": r.Header.Get("Connection"),
			"xff": r.Header.Get("X-Forwarded-For"), "xfh": r.Header.Get("X-Forwarded-Host"), "xfp": r.Header.Get("X-Forwarded-Proto"),
		})
	}))
	t.Cleanup(echo.Close)
	backends["notes"] = strings.TrimPrefix(echo.URL, "http://")
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	backends["terminal"] = dead.Addr().String()
	dead.Close()

	cfg := gateway.Config{
		Domain: "example.test", ProjectID: project, ContainerID: container,
		Known:   []string{"cron", "files", "terminal", "display", "vault", "notes"},
		Backend: func(n string) (string, bool) { a, ok := backends[n]; return a, ok },
		Status: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"status":"here"}`)
		}),
		Logger: quiet,
	}
	for _, o := range opts {
		o(&cfg)
	}
	g := gateway.New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(ln) }()
	t.Cleanup(func() {
		_ = g.Shutdown(context.Background())
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return &fixture{gw: g, url: "http://" + ln.Addr().String(), filesURL: "http://" + backends["files"]}
}

func (f *fixture) get(t *testing.T, host, path string, hdr ...string) (int, map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return platformtest.Do(t, req)
}

func TestRouting(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "proj", "b0c1-ctr")
	cases := []struct {
		name, host, path string
		status           int
		check            func(m map[string]any) bool
	}{
		{"path to cron health", "", "/_/cron/health", 200, func(m map[string]any) bool { return m["service"] == "cron" && m["status"] == "ok" }},
		{"path to files version", "", "/_/files/api/v1/version", 200, func(m map[string]any) bool { return m["version"] == "v1" }},
		{"directory form is /", "", "/_/notes/", 200, func(m map[string]any) bool { return m["path"] == "/" && m["prefix"] == "/_/notes" }},
		{"prefix stripped, escapes and query kept", "", "/_/notes/a%2Fb/c?x=1&y=%20", 200,
			func(m map[string]any) bool {
				return m["path"] == "/a/b/c" && m["raw_path"] == "/a%2Fb/c" && m["query"] == "x=1&y=%20"
			}},
		{"forwarded headers", "", "/_/notes/h", 200,
			func(m map[string]any) bool {
				return m["xff"] == "127.0.0.1" && m["xfp"] == "http" && strings.HasPrefix(m["xfh"].(string), "127.0.0.1:")
			}},
		{"host to files", "proj-b0c1-ctr-files-1.srv.example.test", "/api/v1/version", 200, func(m map[string]any) bool { return m["server_version"] == platform.Version }},
		{"host with port to cron", "proj-b0c1-ctr-cron-1.srv.example.test:443", "/health", 200, func(m map[string]any) bool { return m["service"] == "cron" }},
		{"host keeps the path", "proj-b0c1-ctr-notes-1.srv.example.test", "/_/cron/x", 200, func(m map[string]any) bool { return m["path"] == "/_/cron/x" }},
		{"host of another container", "proj-other-files-1.srv.example.test", "/api/v1/version", 404, errCode("NOT_FOUND", "another container")},
		{"instance 2", "proj-b0c1-ctr-files-2.srv.example.test", "/api/v1/version", 404, errCode("NOT_FOUND", "instance 2")},
		{"unknown service by path", "", "/_/bogus/x", 404, errCode("NOT_FOUND", `unknown service "bogus"`)},
		{"known but not running", "", "/_/vault/x", 404, errCode("NOT_FOUND", "vault is not running")},
		{"empty service", "", "/_//x", 404, errCode("NOT_FOUND", "no service named")},
		{"no service named", "", "/health", 404, errCode("NOT_FOUND", "/_/<service>/")},
		{"service down", "", "/_/terminal/x", 502, errCode("BACKEND_ERROR", "terminal is not answering")},
		{"service's own 404 passes through", "", "/_/cron/nope", 404, errCode("NOT_FOUND", "no such route")},
		{"status", "", gateway.StatusPath, 200, func(m map[string]any) bool { return m["status"] == "here" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, m, raw := f.get(t, tc.host, tc.path)
			if status != tc.status || !tc.check(m) {
				t.Fatalf("GET %s (Host %q): %d %s", tc.path, tc.host, status, raw)
			}
		})
	}
}

func errCode(code, msgHas string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		msg, _ := m["message"].(string)
		_, hasDetails := m["details"]
		return m["code"] == code && strings.Contains(msg, msgHas) && hasDetails && len(m) == 3
	}
}

func TestForwardedForIsNotTakenFromTheClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "")
	_, m, raw := f.get(t, "", "/_/notes/x", "X-Forwarded-For", "6.6.6.6", "X-Forwarded-Prefix", "/evil")
	if m["xff"] != "127.0.0.1" || m["prefix"] != "/_/notes" {
		t.Fatalf("client-supplied X-Forwarded-* reached the service: %s", raw)
	}
	_, m, raw = f.get(t, "any-thing-notes-1.s.example.test", "/x", "X-Forwarded-Prefix", "/evil")
	if m["prefix"] != "" {
		t.Fatalf("client-supplied X-Forwarded-Prefix reached the service: %s", raw)
	}
	// Without configured ids, any project/container prefix routes.
	status, m, raw := f.get(t, "any-thing-cron-1.s.example.test", "/health")
	if status != 200 || m["service"] != "cron" {
		t.Fatalf("%d %s", status, raw)
	}
}

// TestGatewayOwnsForwardedHeaders: the client's X-Forwarded-Host never
// reaches a service (services trust the gateway's for the same-origin
// check), and a Connection header cannot make Origin hop-by-hop.
func TestGatewayOwnsForwardedHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "")
	own := f.url
	_, m, raw := f.get(t, "", "/_/notes/x", "X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https",
		"Connection", "Origin, X-Custom", "Origin", own)
	if !strings.HasPrefix(m["xfh"].(string), "127.0.0.1:") || m["xfp"] != "http" {
		t.Fatalf("client-supplied X-Forwarded-Host/Proto reached the service: %s", raw)
	}
	if m["origin"] != own {
		t.Fatalf("Origin was dropped as hop-by-hop: %s", raw)
	}
	status, m, raw := f.get(t, "", "/_/notes/x", "Connection", "Origin", "Origin", "http://evil.example")
	if status != http.StatusForbidden || m["code"] != "FORBIDDEN" {
		t.Fatalf("cross-site Origin with Connection: Origin: %d %s", status, raw)
	}
	status, m, raw = f.get(t, "evil.example", "/_/notes/x")
	if status != http.StatusMisdirectedRequest || m["code"] != "MISDIRECTED_REQUEST" {
		t.Fatalf("foreign Host: %d %s", status, raw)
	}
}

// TestTrustProxyHeaders: behind the platform proxy (--trust-proxy-headers)
// the services get the client the proxy saw, as one X-Forwarded-For. (A
// proxied client is not loopback, so an authorizer that admits all stands
// in for a document.)
func TestTrustProxyHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "", func(c *gateway.Config) { c.TrustProxyHeaders = true; c.Authorizer = admitAll{} })
	_, m, raw := f.get(t, "", "/_/notes/x", "X-Forwarded-For", "6.6.6.6, 7.7.7.7")
	if m["xff"] != "7.7.7.7" {
		t.Fatalf("trusted proxy's client: %s", raw)
	}
	_, m, raw = f.get(t, "", "/_/notes/x")
	if m["xff"] != "127.0.0.1" {
		t.Fatalf("no proxy header: %s", raw)
	}
}

func TestDirectoryRedirect(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cases := []struct {
		method, path string
		status       int
		location     string
	}{
		{http.MethodGet, "/_/notes", http.StatusPermanentRedirect, "/_/notes/"},
		{http.MethodGet, "/_/notes?a=1&b=2", http.StatusPermanentRedirect, "/_/notes/?a=1&b=2"},
		{http.MethodHead, "/_/notes", http.StatusPermanentRedirect, "/_/notes/"},
		{http.MethodPost, "/_/notes", http.StatusOK, ""}, // API calls are not bounced
		{http.MethodGet, "/_/vault", http.StatusNotFound, ""},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, f.url+tc.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s %s: %d Location %q, want %d %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.location)
		}
	}
}

func TestNonLoopbackClientsAreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "")
	remote := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5555}
	for _, path := range []string{"/_/cron/health", gateway.StatusPath} {
		var req fasthttp.Request
		req.SetRequestURI(path)
		req.Header.SetHost("127.0.0.1:7700")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, remote, nil)
		f.gw.Handler()(&ctx)
		var m map[string]any
		_ = json.Unmarshal(ctx.Response.Body(), &m)
		if ctx.Response.StatusCode() != http.StatusForbidden || m["code"] != "FORBIDDEN" || m["message"] == "" {
			t.Fatalf("%s from 10.1.2.3: %d %s", path, ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	hdr := func(v string) func(string) string {
		return func(name string) string {
			if name == "X-Forwarded-For" {
				return v
			}
			return ""
		}
	}
	trusted := func() bool { return true }
	loop := gateway.Request{Method: "GET", Path: "/_/cron/health", RemoteIP: net.ParseIP("::1"), Header: hdr("10.1.2.3"), TrustedPeer: trusted}
	if _, err := (gateway.LoopbackOnly{}).Authorize(loop, gateway.Target{Service: "cron"}); err != nil {
		t.Fatalf("IPv6 loopback refused: %v", err)
	}
	loop.TrustedPeer = func() bool { return false }
	if _, err := (gateway.LoopbackOnly{}).Authorize(loop, gateway.Target{Service: "cron"}); err == nil {
		t.Fatal("a loopback connection of an untrusted local user passed")
	}
	forged := gateway.Request{Method: "GET", Path: "/_/cron/health", RemoteIP: net.ParseIP("10.1.2.3"), Header: hdr("127.0.0.1")}
	if _, err := (gateway.LoopbackOnly{}).Authorize(forged, gateway.Target{Service: "cron"}); err == nil {
		t.Fatal("a forged X-Forwarded-For made a remote client loopback")
	}
}

func TestWebSocketPassesThrough(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "p", "c")
	for _, tc := range []struct{ name, url, host string }{
		{"path", "ws" + strings.TrimPrefix(f.url, "http") + "/_/notes/ws", ""},
		{"host", "ws" + strings.TrimPrefix(f.url, "http") + "/ws", "p-c-notes-1.srv.example.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{}
			if tc.host != "" {
				hdr.Set("Host", tc.host)
			}
			c, resp, err := websocket.DefaultDialer.Dial(tc.url, hdr)
			if err != nil {
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			defer c.Close()
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("status %d", resp.StatusCode)
			}
			for _, msg := range []string{"hello", strings.Repeat("x", 100000)} {
				if err := c.WriteMessage(websocket.BinaryMessage, []byte(msg)); err != nil {
					t.Fatal(err)
				}
				mt, got, err := c.ReadMessage()
				if err != nil || mt != websocket.BinaryMessage || string(got) != "echo:"+msg {
					t.Fatalf("got %d %.40q %v", mt, got, err)
				}
			}
		})
	}
}

// TestUntrustedLocalUserIsNotLoopback: a loopback connection counts as a
// loopback client only when its socket belongs to root, the agent's own
// user or a trusted uid; another local user is refused like an outside
// client, the status included.
func TestUntrustedLocalUserIsNotLoopback(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "")
	for _, path := range []string{"/_/cron/health", gateway.StatusPath} {
		status, body := platformtest.AsUser(t, platformtest.Nobody, "GET", f.url+path, "")
		if status != 403 || !strings.Contains(body, `"code":"FORBIDDEN"`) {
			t.Fatalf("uid %d %s: %d %s", platformtest.Nobody, path, status, body)
		}
		if status, _, raw := f.get(t, "", path); status != 200 {
			t.Fatalf("own user %s: %d %s", path, status, raw)
		}
	}
	trusting := newFixture(t, "", "", func(c *gateway.Config) { c.LocalTrust = reqpolicy.NewLocalTrust([]uint32{platformtest.Nobody}) })
	if status, body := platformtest.AsUser(t, platformtest.Nobody, "GET", trusting.url+"/_/cron/health", ""); status != 200 {
		t.Fatalf("trusted uid %d: %d %s", platformtest.Nobody, status, body)
	}
}

// The health path answers clients off loopback (the control plane checks
// a container's agent over the engine's network) and says nothing more.
func TestHealthAnswersAnyClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "")
	remote := &net.TCPAddr{IP: net.ParseIP("172.17.0.1"), Port: 5555}
	for _, tc := range []struct {
		method string
		status int
	}{{"GET", 200}, {"HEAD", 200}, {"POST", 405}} {
		var req fasthttp.Request
		req.SetRequestURI(gateway.HealthPath)
		req.Header.SetMethod(tc.method)
		req.Header.SetHost("172.17.0.2:7700")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, remote, nil)
		f.gw.Handler()(&ctx)
		if ctx.Response.StatusCode() != tc.status {
			t.Fatalf("%s %s from 172.17.0.1: %d %s", tc.method, gateway.HealthPath, ctx.Response.StatusCode(), ctx.Response.Body())
		}
		if tc.method == "GET" && string(ctx.Response.Body()) != `{"status":"ok"}` {
			t.Fatalf("health body %s", ctx.Response.Body())
		}
	}
}
