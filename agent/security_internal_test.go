package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/platform/platformtest"
)

// secAgent is a real supervisor running every registered service in-process
// behind its gateway, configured with one extra allowed origin.
type secAgent struct {
	gw   string // http://127.0.0.1:<port>
	base int
}

const allowedTestOrigin = "https://app.example.com"

func startSecAgent(t *testing.T) *secAgent {
	t.Helper()
	set := DefaultSettings()
	if err := set.Set("allowed-origins", allowedTestOrigin); err != nil {
		t.Fatal(err)
	}
	if err := set.Set("files-root", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	sup := runSupervisor(t, Config{Services: Registered(), Isolate: map[string]bool{}, Settings: set})
	return &secAgent{gw: "http://" + sup.GatewayAddr(), base: sup.cfg.PortBase}
}

func (a *secAgent) serviceURL(name string) string {
	return "http://127.0.0.1:" + strconv.Itoa(Port(a.base, name))
}

type secReq struct {
	method, url, host, ctype, body string
	hdr                            []string
}

func (r secReq) do(t *testing.T) (int, map[string]any, string) {
	t.Helper()
	req, cancel := r.request(t)
	defer cancel()
	return platformtest.Do(t, req)
}

// send is do with the response's headers.
func (r secReq) send(t *testing.T) (*http.Response, string) {
	t.Helper()
	req, cancel := r.request(t)
	defer cancel()
	return platformtest.DoResponse(t, req)
}

func (r secReq) request(t *testing.T) (*http.Request, context.CancelFunc) {
	t.Helper()
	// A hang guard (an upgrade that got through never ends), not a timing.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.host != "" {
		req.Host = r.host
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	for i := 0; i+1 < len(r.hdr); i += 2 {
		req.Header.Set(r.hdr[i], r.hdr[i+1])
	}
	return req, cancel
}

func (a *secAgent) sessions(t *testing.T) int {
	t.Helper()
	var list []map[string]any
	st, _, raw := secReq{method: "GET", url: a.gw + "/_/terminal/api/v1/terminal/sessions"}.do(t)
	if st != 200 || json.Unmarshal([]byte(raw), &list) != nil {
		t.Fatalf("sessions: %d %s", st, raw)
	}
	return len(list)
}

// TestCrossSiteShell: a page on another site POSTs a "simple"
// request (text/plain or form-encoded, no preflight) to create a shell.
// Through the gateway and directly on the service's port it must be
// refused before any session starts.
func TestCrossSiteShell(t *testing.T) {
	a := startSecAgent(t)
	pwned := filepath.Join(t.TempDir(), "pwned")
	body := `{"shell":"/bin/bash","env":{"PROMPT_COMMAND":"id > ` + pwned + `"}}`
	for _, base := range []string{a.gw + "/_/terminal", a.serviceURL("terminal")} {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded"} {
			for _, hdr := range [][]string{
				{"Origin", "http://evil.example"},
				{"Origin", "null"},
				{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"},
			} {
				st, m, raw := secReq{method: "POST", url: base + "/api/v1/terminal/create", ctype: ct, body: body, hdr: hdr}.do(t)
				if st != http.StatusForbidden || m["code"] != "FORBIDDEN" || len(m) != 3 {
					t.Errorf("%s %s %v: %d %s", base, ct, hdr, st, raw)
				}
			}
		}
	}
	if n := a.sessions(t); n != 0 {
		t.Fatalf("a cross-site request started %d session(s)", n)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the cross-site command ran")
	}
}

// TestDNSRebinding: a rebinding page reaches the agent with
// its own name in Host (and Origin equal to it). Nothing is routed: the
// WebSocket shell, the sessions list and the screenshot all get 421.
func TestDNSRebinding(t *testing.T) {
	a := startSecAgent(t)
	port := strings.TrimPrefix(a.gw, "http://127.0.0.1:")
	evil := "evil.example:" + port
	for _, p := range []string{"/_/terminal/api/v1/terminal/sessions", "/_/terminal/api/v1/terminal/screenshot",
		"/_/display/api/v1/display/screenshots", "/_/cron/health", "/_agent/status"} {
		st, m, raw := secReq{method: "GET", url: a.gw + p, host: evil}.do(t)
		if st != http.StatusMisdirectedRequest || m["code"] != "MISDIRECTED_REQUEST" {
			t.Errorf("GET %s with Host %s: %d %s", p, evil, st, raw)
		}
	}
	// Directly on the service's port too.
	st, _, raw := secReq{method: "GET", url: a.serviceURL("terminal") + "/api/v1/terminal/sessions", host: "evil.example"}.do(t)
	if st != http.StatusMisdirectedRequest {
		t.Errorf("direct sessions with a foreign Host: %d %s", st, raw)
	}
	hdr := http.Header{"Host": {evil}, "Origin": {"http://" + evil}}
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(a.gw, "http")+"/_/terminal/api/v1/terminal/ws", hdr)
	if err == nil {
		c.Close()
		t.Fatal("a rebinding page opened a WebSocket shell")
	}
	if resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("rebinding upgrade: %v %v", resp, err)
	}
	if n := a.sessions(t); n != 0 {
		t.Fatalf("rebinding started %d session(s)", n)
	}
}

// TestLooseWebSocketOrigins: a WebSocket upgrade from an origin that only
// looks like the agent's (another port, a lookalike name) is refused.
func TestLooseWebSocketOrigins(t *testing.T) {
	a := startSecAgent(t)
	ws := "ws" + strings.TrimPrefix(a.gw, "http") + "/_/terminal/api/v1/terminal/ws"
	direct := "ws" + strings.TrimPrefix(a.serviceURL("terminal"), "http") + "/api/v1/terminal/ws"
	for _, tc := range []struct {
		name, url string
		hdr       http.Header
	}{
		{"ipv6 loopback, other port", ws, http.Header{"Origin": {"http://[::1]:9"}}},
		{"127.0.0.1, other port", ws, http.Header{"Origin": {"http://127.0.0.1:9"}}},
		{"evil.localhost", ws, http.Header{"Origin": {"http://evil.localhost"}}},
		{"client X-Forwarded-Host", ws, http.Header{"Origin": {"http://evil.example"}, "X-Forwarded-Host": {"evil.example"}}},
		{"direct, ipv6 loopback", direct, http.Header{"Origin": {"http://[::1]:9"}}},
		{"direct, client X-Forwarded-Host", direct, http.Header{"Origin": {"http://evil.example"}, "X-Forwarded-Host": {"evil.example"}}},
	} {
		c, resp, err := websocket.DefaultDialer.Dial(tc.url, tc.hdr)
		if err == nil {
			c.Close()
			t.Errorf("%s: upgraded", tc.name)
			continue
		}
		if resp == nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusMisdirectedRequest) {
			t.Errorf("%s: %v %v", tc.name, resp, err)
		}
	}
	// "Connection: Upgrade, Origin" must not make the gateway drop Origin.
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.gw, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /_/terminal/api/v1/terminal/ws HTTP/1.1\r\nHost: "+strings.TrimPrefix(a.gw, "http://")+
		"\r\nConnection: Upgrade, Origin\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://evil.example\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("Connection: Upgrade, Origin: %d", resp.StatusCode)
	}
	if n := a.sessions(t); n != 0 {
		t.Fatalf("loose origins started %d session(s)", n)
	}
	// The page's own origin through the gateway still opens a shell.
	c, _, err := websocket.DefaultDialer.Dial(ws, http.Header{"Origin": {a.gw}})
	if err != nil {
		t.Fatalf("own origin: %v", err)
	}
	c.Close()
}

// policyRoute is one route of a running service, read from its OpenAPI
// document (which the route table produces, and which a test keeps equal
// to the served routes), so new routes join this table by themselves.
type policyRoute struct {
	service, method, path string
	websocket             bool
}

func routesOf(t *testing.T, a *secAgent) []policyRoute {
	t.Helper()
	var out []policyRoute
	for _, name := range Registered() {
		_, _, raw := secReq{method: "GET", url: a.serviceURL(name) + "/openapi.json"}.do(t)
		var doc struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal([]byte(raw), &doc); err != nil || len(doc.Paths) == 0 {
			t.Fatalf("%s openapi: %v %.200s", name, err, raw)
		}
		for p, item := range doc.Paths {
			for m, op := range item {
				if m == "parameters" {
					continue
				}
				var o map[string]any
				_ = json.Unmarshal(op, &o)
				_, ws := o["x-websocket"]
				out = append(out, policyRoute{service: name, method: strings.ToUpper(m), path: fillParams(p), websocket: ws})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].service+out[i].path+out[i].method < out[j].service+out[j].path+out[j].method
	})
	return out
}

// bases are where a service's routes are served: through the gateway and
// on the service's own port.
func (a *secAgent) bases(service string) []string {
	return []string{a.gw + "/_/" + service, a.serviceURL(service)}
}

// ownOrigin is the origin of a page served from base, and its port.
func ownOrigin(base string) (origin, port string) {
	port = strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "127.0.0.1:")
	port, _, _ = strings.Cut(port, "/")
	return "http://127.0.0.1:" + port, port
}

func fillParams(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, "{") {
			parts[i] = "x"
		}
	}
	return strings.Join(parts, "/")
}

// TestPolicyOnEveryRoute sends every route of every service, through the
// gateway and directly, with a cross-site Origin (text/plain and form
// bodies, WebSocket upgrades) and with a foreign Host: none reaches a
// handler. The same requests with an allowed origin or none still do.
func TestPolicyOnEveryRoute(t *testing.T) {
	a := startSecAgent(t)
	routes := routesOf(t, a)
	state := 0
	for _, r := range routes {
		if r.method != "GET" && r.method != "HEAD" {
			state++
		}
	}
	if state < 3 {
		t.Fatalf("only %d state-changing routes found: %v", state, routes)
	}
	refused := func(st int, m map[string]any) bool {
		return (st == 403 && m["code"] == "FORBIDDEN") || (st == 421 && m["code"] == "MISDIRECTED_REQUEST")
	}
	upgrade := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, r := range routes {
		for _, base := range a.bases(r.service) {
			own, gwPort := ownOrigin(base)
			for _, bad := range []secReq{
				{ctype: "text/plain", body: "{}", hdr: []string{"Origin", "http://evil.example"}},
				{ctype: "application/x-www-form-urlencoded", body: "a=b", hdr: []string{"Origin", "http://evil.example"}},
				{ctype: "text/plain", body: "{}", hdr: []string{"Origin", "http://[::1]:9"}},
				{ctype: "text/plain", body: "{}", hdr: []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}},
				{ctype: "text/plain", body: "{}", host: "evil.example:" + gwPort, hdr: []string{"Origin", "http://evil.example:" + gwPort}},
				{ctype: "text/plain", body: "{}", host: "evil.example:" + gwPort},
			} {
				bad.method, bad.url = r.method, base+r.path
				if r.websocket {
					bad.hdr = append(append([]string(nil), bad.hdr...), upgrade...)
				}
				st, m, raw := bad.do(t)
				if r.method == "HEAD" && (st == 403 || st == 421) && raw == "" {
					// A HEAD answer has no body to carry the code: the
					// status is all a refusal can say.
					continue
				}
				if !refused(st, m) {
					t.Errorf("%s %s host %q %v: reached the service: %d %.200s", r.method, bad.url, bad.host, bad.hdr, st, raw)
				}
			}
			for _, good := range []secReq{
				{ctype: "application/json", body: "{}"},
				{ctype: "application/json", body: "{}", hdr: []string{"Origin", own}},
				{ctype: "application/json", body: "{}", hdr: []string{"Origin", allowedTestOrigin, "Sec-Fetch-Site", "cross-site"}},
				{ctype: "application/json", body: "{}", host: "localhost:" + gwPort, hdr: []string{"Origin", "http://localhost:" + gwPort}},
			} {
				good.method, good.url = r.method, base+r.path
				st, m, raw := good.do(t)
				if refused(st, m) {
					t.Errorf("%s %s %v: refused: %d %.200s", r.method, good.url, good.hdr, st, raw)
				}
			}
		}
	}
}

// TestCORSOnEveryRoute: on every route of every service, through the
// gateway and on the service's own port, a preflight from the allowed
// origin is answered by the policy (204 and the CORS headers, whatever the
// route's method; the handler would have answered otherwise) and one from
// another origin gets the policy's 403 without them. Real GETs from the
// allowed origin carry the headers, whatever their status; from the own
// origin they carry none.
func TestCORSOnEveryRoute(t *testing.T) {
	a := startSecAgent(t)
	for _, r := range routesOf(t, a) {
		for _, base := range a.bases(r.service) {
			own, _ := ownOrigin(base)
			url := base + r.path
			resp, body := secReq{method: "OPTIONS", url: url, hdr: []string{"Origin", allowedTestOrigin,
				"Access-Control-Request-Method", r.method, "Access-Control-Request-Headers", "authorization,content-type"}}.send(t)
			if resp.StatusCode != http.StatusNoContent || body != "" || resp.Header.Get("Access-Control-Allow-Origin") != allowedTestOrigin ||
				resp.Header.Get("Access-Control-Allow-Credentials") != "true" || resp.Header.Get("Access-Control-Allow-Headers") != "authorization, content-type" ||
				!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PATCH") {
				t.Errorf("preflight %s %s: %d %v %.200s", r.method, url, resp.StatusCode, resp.Header, body)
			}
			resp, body = secReq{method: "OPTIONS", url: url, hdr: []string{"Origin", "http://evil.example",
				"Access-Control-Request-Method", r.method}}.send(t)
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("refused preflight %s %s: %d %v %.200s", r.method, url, resp.StatusCode, resp.Header, body)
			}
			if r.method != "GET" || r.websocket {
				continue
			}
			resp, body = secReq{method: "GET", url: url, hdr: []string{"Origin", allowedTestOrigin}}.send(t)
			if resp.Header.Get("Access-Control-Allow-Origin") != allowedTestOrigin || !strings.Contains(resp.Header.Get("Vary"), "Origin") ||
				len(resp.Header.Values("Access-Control-Allow-Origin")) != 1 {
				t.Errorf("GET %s from the allowed origin: %d %v %.200s", url, resp.StatusCode, resp.Header, body)
			}
			resp, body = secReq{method: "GET", url: url, hdr: []string{"Origin", own}}.send(t)
			if resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("GET %s from its own origin: %d %v %.200s", url, resp.StatusCode, resp.Header, body)
			}
		}
	}
}
