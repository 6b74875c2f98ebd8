package platform_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/platform/store"

	"github.com/gofiber/fiber/v3"
)

type echoReq struct {
	Name  string `json:"name" required:"true"`
	Count int    `json:"count"`
}

func (r *echoReq) Validate() error {
	if r.Name == "" {
		return fault.Invalid("name", "is required")
	}
	return nil
}

func testRoutes() []platform.Route {
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/echo", Summary: "echo", Body: echoReq{}, Response: echoReq{},
			Handler: func(c fiber.Ctx) error {
				var req echoReq
				if err := platform.DecodeBytes(c.Body(), &req); err != nil {
					return err
				}
				return platform.JSON(c, 200, req)
			}},
		{Method: http.MethodGet, Path: "/api/v1/things/{id}", Summary: "thing",
			Handler: func(c fiber.Ctx) error { return fault.NotFound("thing", c.Params("id")) }},
		{Method: http.MethodGet, Path: "/api/v1/boom", Summary: "panics",
			Handler: func(c fiber.Ctx) error { panic("secret internal detail") }},
		{Method: http.MethodGet, Path: "/api/v1/net", Summary: "net/http handler",
			HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from net/http") })},
	}
}

var (
	servedMu sync.Mutex
	served   = map[*platform.Host]string{}
)

// serve starts h once on a loopback port and returns its base URL.
func serve(t *testing.T, h *platform.Host) string {
	servedMu.Lock()
	defer servedMu.Unlock()
	if u, ok := served[h]; ok {
		return u
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go h.Serve(ln)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	served[h] = "http://" + ln.Addr().String()
	return served[h]
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func do(t *testing.T, h *platform.Host, method, path, body string) (int, map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest(method, serve(t, h)+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return platformtest.Do(t, req)
}

func TestContainerErrorsAndDecode(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "test", Title: "t", Version: "1"}, BodyLimit: 1024}, testRoutes())
	serve(t, h)
	cases := []struct {
		name, method, path, body string
		status                   int
		code, msgHas             string
	}{
		{"ok", "POST", "/api/v1/echo", `{"name":"a","count":2}`, 200, "", ""},
		{"missing field", "POST", "/api/v1/echo", `{}`, 400, "INVALID", "name: is required"},
		{"wrong type", "POST", "/api/v1/echo", `{"name":"a","count":"x"}`, 400, "INVALID", "count: must be an integer"},
		{"unknown field", "POST", "/api/v1/echo", `{"name":"a","zzz":1}`, 400, "INVALID", "zzz: unknown field"},
		{"malformed", "POST", "/api/v1/echo", `{"name":`, 400, "INVALID", "body:"},
		{"trailing", "POST", "/api/v1/echo", `{"name":"a"} {}`, 400, "INVALID", "unexpected data"},
		{"too large", "POST", "/api/v1/echo", `{"name":"` + strings.Repeat("a", 4096) + `"}`, 413, "PAYLOAD_TOO_LARGE", "size limit"},
		{"not found", "GET", "/api/v1/things/7", "", 404, "NOT_FOUND", `"7"`},
		{"no route", "GET", "/nope", "", 404, "NOT_FOUND", "no such route"},
		{"panic", "GET", "/api/v1/boom", "", 500, "INTERNAL", "internal error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, m, raw := do(t, h, tc.method, tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, raw)
			}
			if tc.code == "" {
				return
			}
			if m["code"] != tc.code || !strings.Contains(m["message"].(string), tc.msgHas) {
				t.Fatalf("body %s, want code %s with %q", raw, tc.code, tc.msgHas)
			}
			if _, ok := m["details"]; !ok || strings.Contains(raw, "secret internal") || strings.Contains(raw, "goroutine") {
				t.Fatalf("bad error body %s", raw)
			}
		})
	}
}

func TestEnvelopeErrors(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "control"}, Style: platform.EnvelopeErrors}, testRoutes())
	status, m, raw := do(t, h, "GET", "/api/v1/nothing", "")
	if status != 404 || m["statusCode"] != float64(404) || m["error"] != "Not Found" || m["message"] == "" {
		t.Fatalf("got %d %s", status, raw)
	}
}

func TestOpenAPIListsEveryRegisteredRoute(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "test", Title: "Test", Version: "1"}}, testRoutes())
	status, doc, raw := do(t, h, "GET", "/openapi.json", "")
	if status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	_ = doc
	platformtest.CheckRoutesDocumented(t, h)
	status, _, raw = do(t, h, "GET", "/openapi.yaml", "")
	if status != 200 || !strings.Contains(raw, "openapi: 3.0.3") {
		t.Fatalf("yaml %d %s", status, raw)
	}
	status, _, raw = do(t, h, "GET", "/api/v1/net", "")
	if status != 200 || raw != "from net/http" {
		t.Fatalf("net/http route: %d %q", status, raw)
	}
	status, m, raw := do(t, h, "GET", "/health", "")
	if status != 200 || m["service"] != "test" || m["status"] != "ok" || m["fds"] == nil || m["memory"] == nil {
		t.Fatalf("health: %d %s", status, raw)
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	echoIP := []platform.Route{{Method: http.MethodGet, Path: "/ip", Summary: "ip",
		Handler: func(c fiber.Ctx) error { return c.SendString(platform.ClientIP(c)) }}}
	trusting := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "t"}, ProxyHeader: "X-Forwarded-For"}, echoIP)
	plain := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "t"}}, echoIP)
	cases := []struct {
		name string
		h    *platform.Host
		xff  []string
		want string
	}{
		{"trusted proxy, right-most hop", trusting, []string{"1.2.3.4, 10.9.8.7"}, "10.9.8.7"},
		{"trusted proxy, its own header line", trusting, []string{"1.2.3.4", "10.9.8.7"}, "10.9.8.7"},
		{"trusted proxy, no header", trusting, nil, "127.0.0.1"},
		{"trusted proxy, garbage header", trusting, []string{"nonsense"}, "127.0.0.1"},
		{"trusted proxy, right-most hop with a port", trusting, []string{"1.2.3.4, 10.9.8.7:80"}, "127.0.0.1"},
		{"header ignored without ProxyHeader", plain, []string{"1.2.3.4"}, "127.0.0.1"},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodGet, serve(t, tc.h)+"/ip", nil)
		for _, l := range tc.xff {
			req.Header.Add("X-Forwarded-For", l)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != tc.want {
			t.Errorf("%s: got %q want %q", tc.name, body, tc.want)
		}
	}
}

func TestOpenAPIFailureIsBackendError(t *testing.T) {
	t.Parallel()
	dup := testRoutes()[:1]
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "cron"}}, dup, dup)
	for _, p := range []string{"/openapi.json", "/openapi.yaml"} {
		status, m, raw := do(t, h, "GET", p, "")
		if status != 500 || m["code"] != "BACKEND_ERROR" || m["message"] != "Internal server error" {
			t.Fatalf("%s: %d %s", p, status, raw)
		}
	}
}

// A lost database is 503 UNAVAILABLE with Retry-After in the envelope,
// whether a handler wrapped it with Internal or returned it bare, and the
// driver's words never reach the client.
func TestStoreUnavailableIs503(t *testing.T) {
	t.Parallel()
	lost := fmt.Errorf("%w: dial tcp 10.0.0.9:5432: connection refused", store.ErrUnavailable)
	routes := []platform.Route{
		{Method: http.MethodGet, Path: "/wrapped", Summary: "wrapped", Policy: platform.Public,
			Handler: func(fiber.Ctx) error { return fault.Internal("save the thing", lost) }},
		{Method: http.MethodGet, Path: "/bare", Summary: "bare", Policy: platform.Public,
			Handler: func(fiber.Ctx) error { return lost }},
	}
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "control"}, Style: platform.EnvelopeErrors}, routes)
	for _, path := range []string{"/wrapped", "/bare"} {
		status, m, raw := do(t, h, "GET", path, "")
		if status != 503 || m["statusCode"] != float64(503) || m["error"] != "Service Unavailable" ||
			!strings.Contains(raw, "database is unavailable") || strings.Contains(raw, "10.0.0.9") {
			t.Fatalf("%s: %d %s", path, status, raw)
		}
	}
}

// A net/http route sees the socket its request arrived on (the tunnel
// splices into it after a hijack), and the request's end leaves that
// socket open for the next request on it (fasthttp closes user values
// that are io.Closers when a request ends).
func TestConnFromIsTheRequestSocket(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "t"}}, []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/conn", Summary: "the socket",
			HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c := platform.ConnFrom(r.Context())
				if c == nil {
					io.WriteString(w, "none")
					return
				}
				fmt.Fprintf(w, "%T %s %s", c, c.LocalAddr(), c.RemoteAddr())
			})},
	})
	base := serve(t, h)
	var first string
	for i := range 3 {
		resp, err := http.Get(base + "/api/v1/conn")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if i == 0 {
			first = string(got)
			if !strings.HasPrefix(first, "*net.TCPConn "+strings.TrimPrefix(base, "http://")+" 127.0.0.1:") {
				t.Fatalf("ConnFrom gave %q, want the TCP socket on %s", got, base)
			}
		} else if string(got) != first {
			t.Fatalf("request %d came on %q, the first on %q: the socket did not outlive its request", i, got, first)
		}
	}
	if platform.ConnFrom(context.Background()) != nil {
		t.Fatal("a context outside a Host has a socket")
	}
}

// Every log line a host writes names its service exactly once, whether
// the logger it is given carries the name already (a container service's,
// from its ServiceDeps) or not (the control plane's).
func TestLogLinesNameTheServiceOnce(t *testing.T) {
	t.Parallel()
	routes := []platform.Route{{Method: http.MethodGet, Path: "/api/v1/x", Summary: "x",
		Handler: func(c fiber.Ctx) error { return fault.Internal("fail", fmt.Errorf("boom")) }}}
	var named, plain platformtest.SyncBuffer
	svc := stubService{routes: routes}
	hs, err := contract.NewServiceHost(svc, contract.ServiceDeps{Name: "cron",
		Logger: slog.New(slog.NewJSONHandler(&named, nil)).With("service", "cron")})
	if err != nil {
		t.Fatal(err)
	}
	hc := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "control"}, Logger: slog.New(slog.NewJSONHandler(&plain, nil))}, routes)
	for _, c := range []struct {
		h    *platform.Host
		buf  *platformtest.SyncBuffer
		name string
	}{{hs, &named, "cron"}, {hc, &plain, "control"}} {
		do(t, c.h, "GET", "/api/v1/x", "")
		lines := strings.Split(strings.TrimSpace(c.buf.String()), "\n")
		if len(lines) < 2 { // the failure and the access line
			t.Fatalf("%s logged %q", c.name, lines)
		}
		for _, l := range lines {
			if n := strings.Count(l, `"service":`); n != 1 || !strings.Contains(l, `"service":"`+c.name+`"`) {
				t.Errorf("%s: %d service keys in %s", c.name, n, l)
			}
		}
	}
}

type stubService struct{ routes []platform.Route }

func (s stubService) Routes() []platform.Route { return s.routes }
func (s stubService) Info() platform.Info {
	return platform.Info{Name: "stub", Title: "Stub", Version: "1"}
}

func TestLocalConnectionsSendUnpaced(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "test", Title: "Test", Version: "1"}}, testRoutes())
	addr := strings.TrimPrefix(platformtest.Serve(t, h), "http://")
	if got := platformtest.AcceptedCongestion(t, addr); got != "reno" {
		t.Errorf("a connection from this host uses %q, want reno", got)
	}
}

// TestNoAnswerCanBeFramed: every answer of a host (pages, errors, a
// net/http handler's, one that sets its own Content-Security-Policy)
// says no page may frame it; a Frameable route's answer (another
// program's page) is left alone.
func TestNoAnswerCanBeFramed(t *testing.T) {
	t.Parallel()
	routes := append(testRoutes(),
		platform.Route{Method: http.MethodGet, Path: "/page", Summary: "a page with its own policy",
			Handler: func(c fiber.Ctx) error {
				c.Set("Content-Security-Policy", "default-src 'self'")
				c.Set("Content-Type", "text/html")
				return c.SendString("<p>hi</p>")
			}},
		platform.Route{Method: http.MethodGet, Path: "/app", Summary: "another program's page", Frameable: true,
			HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app") })})
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "test"}}, routes)
	base := serve(t, h)
	for _, path := range []string{"/page", "/api/v1/net", "/api/v1/things/7", "/nope", "/health"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Values("Content-Security-Policy")
		if resp.Header.Get("X-Frame-Options") != "DENY" || !slices.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: X-Frame-Options %q, Content-Security-Policy %q", path, resp.Header.Get("X-Frame-Options"), csp)
		}
		if path == "/page" && !slices.Contains(csp, "default-src 'self'") {
			t.Errorf("the page's own policy was lost: %q", csp)
		}
	}
	resp, err := http.Get(base + "/app")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Frame-Options") != "" || len(resp.Header.Values("Content-Security-Policy")) != 0 {
		t.Errorf("a Frameable route got framing headers: %v", resp.Header)
	}
}
