package tunnel_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/tunnel"
	wire "github.com/deckhand-dev/deckhand/sdk/go/tunnelwire"
)

// env is a tunnel service served on a loopback port.
type env struct {
	url   string
	svc   *tunnel.Service
	seams *platformtest.Seams
}

func start(t *testing.T, tweak ...func(*tunnel.Settings)) *env {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "tunnel")
	seams := &platformtest.Seams{}
	deps.Notifier, deps.Journal = seams, seams
	set := tunnel.DefaultSettings()
	for _, f := range tweak {
		f(set)
	}
	svc, err := tunnel.New(deps, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return &env{url: platformtest.Serve(t, platformtest.ServiceHost(t, svc)), svc: svc, seams: seams}
}

func (e *env) ws(t *testing.T, port int) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	return websocket.DefaultDialer.Dial(strings.Replace(e.url, "http", "ws", 1)+"/api/v1/tunnel/ws?port="+strconv.Itoa(port), nil)
}

func (e *env) get(t *testing.T, path string, v any) int {
	t.Helper()
	resp, err := http.Get(e.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode
}

// listen opens a TCP server on a free loopback port, serving each
// connection with fn.
func listen(t *testing.T, fn func(net.Conn)) (int, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go fn(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, ln
}

func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	svc, err := tunnel.New(platformtest.ServiceDeps(t, "tunnel"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	platformtest.CheckRoutesDocumented(t, platformtest.ServiceHost(t, svc))
}

func TestBadPorts(t *testing.T) {
	t.Parallel()
	// Every port the case names lies in one reserved free range, so no
	// other test listens on one, and the closed port is outside the
	// agent's own ports and the deny list.
	base := platformtest.FreePortBase(t, 2501)
	port := func(off int) string { return strconv.Itoa(base + off) }
	closed := port(2501)
	e := start(t, func(s *tunnel.Settings) {
		s.PortBase = base
		s.AllowPorts = port(2)
		s.DenyPorts = port(1000)
		s.AgentPorts = port(100) + "-" + port(120) + "," + port(2500)
	})
	cases := []struct {
		name   string
		path   string
		status int
		code   string
	}{
		{"ws port 0", "/api/v1/tunnel/ws?port=0", 400, "INVALID"},
		{"ws port 65536", "/api/v1/tunnel/ws?port=65536", 400, "INVALID"},
		{"ws port missing", "/api/v1/tunnel/ws", 400, "INVALID"},
		{"ws nothing listening", "/api/v1/tunnel/ws?port=" + closed, 502, "UPSTREAM_UNREACHABLE"},
		{"ws agent port", "/api/v1/tunnel/ws?port=" + port(6), 403, "PORT_DENIED"},
		{"ws gateway port", "/api/v1/tunnel/ws?port=" + port(0), 403, "PORT_DENIED"},
		{"ws deny list", "/api/v1/tunnel/ws?port=" + port(1000), 403, "PORT_DENIED"},
		{"ws agent port +15", "/api/v1/tunnel/ws?port=" + port(15), 403, "PORT_DENIED"},
		{"ws agent port +16", "/api/v1/tunnel/ws?port=" + port(16), 403, "PORT_DENIED"},
		{"ws agent port list", "/api/v1/tunnel/ws?port=" + port(2500), 403, "PORT_DENIED"},
		{"proxy agent port range", "/proxy/" + port(117) + "/", 403, "PORT_DENIED"},
		{"ws allowed agent port, nothing there", "/api/v1/tunnel/ws?port=" + port(2), 502, "UPSTREAM_UNREACHABLE"},
		{"proxy port 0", "/proxy/0/", 400, "INVALID"},
		{"proxy port 70000", "/proxy/70000/x", 400, "INVALID"},
		{"proxy port word", "/proxy/abc/x", 400, "INVALID"},
		{"proxy nothing listening", "/proxy/" + closed + "/x", 502, "UPSTREAM_UNREACHABLE"},
		{"proxy agent port", "/proxy/" + port(1) + "/", 403, "PORT_DENIED"},
		{"unknown session", "/api/v1/tunnel/sessions/tun_nope", 404, "NOT_FOUND"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := "GET"
			if strings.Contains(c.path, "/sessions/") {
				method = "DELETE"
			}
			req, _ := http.NewRequest(method, e.url+c.path, nil)
			if strings.Contains(c.path, "/ws") {
				req.Header.Set("Upgrade", "websocket")
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Sec-WebSocket-Version", "13")
				req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			}
			begin := time.Now()
			status, body, raw := platformtest.Do(t, req)
			if status != c.status || body["code"] != c.code {
				t.Fatalf("%s: %d %s, want %d %s", c.path, status, raw, c.status, c.code)
			}
			if d := body["details"]; c.code != "NOT_FOUND" && d != "port" {
				t.Fatalf("details %v, want port: %s", d, raw)
			}
			if c.status == 502 && time.Since(begin) > 2*time.Second {
				t.Fatalf("502 took %v", time.Since(begin))
			}
		})
	}
	for _, bad := range []string{"0", "70000", "5-2", "x"} {
		s := tunnel.DefaultSettings()
		s.DenyPorts = bad
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--tunnel-deny-ports") {
			t.Fatalf("deny %q: %v", bad, err)
		}
		s = tunnel.DefaultSettings()
		s.AgentPorts = bad
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--tunnel-agent-ports") {
			t.Fatalf("agent ports %q: %v", bad, err)
		}
	}
}

// TestGatewayAdmittedPortOnly: a request carrying the gateway's
// AuthorizedPortHeader reaches that port and no other, through the
// reverse proxy and the WebSocket alike, and the header never reaches the
// app.
func TestGatewayAdmittedPortOnly(t *testing.T) {
	t.Parallel()
	e := start(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "admitted=%q", r.Header.Get(platform.AuthorizedPortHeader))
	}))
	defer app.Close()
	ps := strconv.Itoa(app.Listener.Addr().(*net.TCPAddr).Port)
	for _, c := range []struct {
		path, admitted string
		ws             bool
		want           int
	}{
		{"/proxy/" + ps + "/", ps, false, 200},
		{"/proxy/" + ps + "/", "", false, 200}, // no header: no document decided
		{"/proxy/" + ps + "/", "3000", false, 403},
		{"/proxy/" + ps + "/", "7706", false, 403},
		{"/api/v1/tunnel/ws?port=" + ps, "22", true, 403},
	} {
		req, _ := http.NewRequest(http.MethodGet, e.url+c.path, nil)
		if c.admitted != "" {
			req.Header.Set(platform.AuthorizedPortHeader, c.admitted)
		}
		if c.ws {
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("%s admitted %q: %d %s, want %d", c.path, c.admitted, resp.StatusCode, raw, c.want)
		}
		if c.want == 403 && !strings.Contains(string(raw), "PORT_DENIED") {
			t.Fatalf("%s admitted %q: %s", c.path, c.admitted, raw)
		}
		if c.want == 200 && string(raw) != `admitted=""` {
			t.Fatalf("the app saw the gateway's header: %s", raw)
		}
	}
}

// TestLinkLocalIsNeverDialled: a port bound only to a link-local address
// (169.254.0.0/16, fe80::/10: cloud metadata and the like) is not reachable
// through the tunnel, whatever else it listens on.
func TestLinkLocalIsNeverDialled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addrs []string
		want  string
		ok    bool
	}{
		{[]string{"169.254.169.254"}, "", false},
		{[]string{"fe80::1"}, "", false},
		{[]string{"169.254.1.1", "fe80::2"}, "", false},
		{[]string{"0.0.0.0"}, "127.0.0.1", true},
		{[]string{"::"}, "::1", true},
		{[]string{"10.1.2.3"}, "10.1.2.3", true},
		{[]string{"169.254.1.1", "10.1.2.3"}, "10.1.2.3", true},
	} {
		got, ok := tunnel.DialAddress(c.addrs)
		if got != c.want || ok != c.ok {
			t.Errorf("%v: %q %v, want %q %v", c.addrs, got, ok, c.want, c.ok)
		}
	}
}

// TestBridgeHalfClose sends a request, half-closes, and reads the answer a
// server writes only after end of stream — then both sides end cleanly.
func TestBridgeHalfClose(t *testing.T) {
	t.Parallel()
	e := start(t)
	port, _ := listen(t, func(c net.Conn) {
		defer c.Close()
		data, _ := io.ReadAll(c) // until the client's half-close
		fmt.Fprintf(c, "got %d bytes: %s", len(data), bytes.ToUpper(data))
	})
	ws, _, err := e.ws(t, port)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, part := range []string{"hello ", "tunnel"} {
		if err := ws.WriteMessage(websocket.BinaryMessage, []byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"close_write"}`)); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	sawHalfClose := false
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		mt, data, err := ws.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Fatalf("ended with %v, want close 1000", err)
			}
			break
		}
		switch mt {
		case websocket.BinaryMessage:
			got.Write(data)
		case websocket.TextMessage:
			if string(data) != `{"type":"close_write"}` {
				t.Fatalf("text frame %s", data)
			}
			sawHalfClose = true
		}
	}
	if got.String() != "got 12 bytes: HELLO TUNNEL" || !sawHalfClose {
		t.Fatalf("got %q, half-close %v", got.String(), sawHalfClose)
	}
}

// TestCutSessionClosesBothEnds deletes a live session: the server in the
// container sees end of stream and the WebSocket client gets close 1000.
func TestCutSessionClosesBothEnds(t *testing.T) {
	t.Parallel()
	e := start(t)
	serverEnd := make(chan error, 1)
	port, _ := listen(t, func(c net.Conn) {
		defer c.Close()
		_, _ = c.Write([]byte("ready"))
		_, err := io.Copy(io.Discard, c)
		serverEnd <- err
	})
	ws, _, err := e.ws(t, port)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, data, err := ws.ReadMessage(); err != nil || string(data) != "ready" {
		t.Fatalf("%q %v", data, err)
	}
	_ = ws.WriteMessage(websocket.BinaryMessage, []byte("12345"))

	var list tunnel.SessionList
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.get(t, "/api/v1/tunnel/sessions", &list)
		if len(list.Sessions) == 1 && list.Sessions[0].BytesIn == 5 && list.Sessions[0].BytesOut == 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(list.Sessions) != 1 {
		t.Fatalf("sessions %+v", list)
	}
	ss := list.Sessions[0]
	if ss.Kind != "websocket" || ss.Port != port || ss.Target != "127.0.0.1:"+strconv.Itoa(port) || ss.BytesIn != 5 || ss.BytesOut != 5 ||
		!strings.HasPrefix(ss.Client, "127.0.0.1:") || !strings.HasPrefix(ss.ID, "tun_") {
		t.Fatalf("session %+v", ss)
	}
	var tl tunnel.TunnelList
	e.get(t, "/api/v1/tunnel/tunnels", &tl)
	if len(tl.Tunnels) != 1 || tl.Tunnels[0].Port != port || tl.Tunnels[0].Sessions != 1 || tl.Tunnels[0].IDs[0] != ss.ID {
		t.Fatalf("tunnels %+v", tl)
	}

	req, _ := http.NewRequest("DELETE", e.url+"/api/v1/tunnel/sessions/"+ss.ID, nil)
	status, body, raw := platformtest.Do(t, req)
	if status != 200 || body["id"] != ss.ID {
		t.Fatalf("delete: %d %s", status, raw)
	}
	select {
	case err := <-serverEnd:
		if err != nil {
			t.Fatalf("the server's end: %v, want end of stream", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's connection was not closed")
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = ws.ReadMessage()
	var ce *websocket.CloseError
	if !asClose(err, &ce) || ce.Code != 1000 || ce.Text != "session deleted" {
		t.Fatalf("client end: %v, want close 1000 session deleted", err)
	}
	e.get(t, "/api/v1/tunnel/sessions", &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("sessions after delete: %+v", list)
	}
}

func asClose(err error, ce **websocket.CloseError) bool {
	c, ok := err.(*websocket.CloseError)
	*ce = c
	return ok
}

// TestReverseProxy drives a real HTTP server and a WebSocket echo server
// through /proxy/{port}/.
func TestReverseProxy(t *testing.T) {
	t.Parallel()
	e := start(t)
	up := websocket.Upgrader{}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hmr" {
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				mt, data, err := c.ReadMessage()
				if err != nil {
					return
				}
				_ = c.WriteMessage(mt, append([]byte("echo:"), data...))
			}
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Location", "/elsewhere") // must pass untouched
		w.Header().Set("Set-Cookie", "a=b; Path=/")
		w.WriteHeader(201)
		fmt.Fprintf(w, "%s %s?%s host=%s xfh=%s prefix=%s body=%s", r.Method, r.URL.Path, r.URL.RawQuery, r.Host,
			r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Prefix"), body)
	}))
	defer app.Close()
	port := app.Listener.Addr().(*net.TCPAddr).Port
	ps := strconv.Itoa(port)

	resp, err := http.Post(e.url+"/proxy/"+ps+"/api/things?x=1&y=%2F", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	host := strings.TrimPrefix(e.url, "http://")
	// Host is the app's own address; the client's is X-Forwarded-Host.
	want := "POST /api/things?x=1&y=%2F host=localhost:" + ps + " xfh=" + host + " prefix=/proxy/" + ps + " body=payload"
	if resp.StatusCode != 201 || string(raw) != want || resp.Header.Get("Location") != "/elsewhere" || resp.Header.Get("Set-Cookie") != "a=b; Path=/" {
		t.Fatalf("%d %q %v\nwant %q", resp.StatusCode, raw, resp.Header, want)
	}

	// /proxy/{port} without the slash redirects so relative links resolve.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(e.url + "/proxy/" + ps + "?a=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 308 || resp.Header.Get("Location") != "/proxy/"+ps+"/?a=1" {
		t.Fatalf("redirect %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}

	ws, _, err := websocket.DefaultDialer.Dial("ws://"+host+"/proxy/"+ps+"/hmr", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, m := range []string{"update", "full-reload"} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, data, err := ws.ReadMessage()
		if err != nil || string(data) != "echo:"+m {
			t.Fatalf("%q %v", data, err)
		}
	}
	var list tunnel.SessionList
	e.get(t, "/api/v1/tunnel/sessions", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Kind != "proxy" || list.Sessions[0].Port != port {
		t.Fatalf("the upgraded connection is not the one session: %+v", list)
	}
}

// TestDiscoverySeesAPort opens and closes a listener and waits for the
// notifier's port.opened and port.closed events. The scan runs every
// 250 ms, so they come within a second on an idle machine; the test
// logs how long they took and allows a loaded one (the race detector,
// other suites beside it) ten.
func TestDiscoverySeesAPort(t *testing.T) {
	t.Parallel()
	e := start(t)
	var list tunnel.BindingList
	e.get(t, "/api/v1/tunnel/bindings", &list) // the baseline scan is done
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	port := ln.Addr().(*net.TCPAddr).Port
	ev := waitEvent(t, e.seams, contract.EventPortOpened, port, opened.Add(discoveryWait))
	t.Logf("port.opened %s after the listen", time.Since(opened))
	if ev.Data["pid"] == nil || ev.Data["program"] != "tunnel.test" {
		t.Fatalf("event without its process: %+v", ev)
	}
	e.get(t, "/api/v1/tunnel/bindings", &list)
	var b *tunnel.Binding
	for i := range list.Bindings {
		if list.Bindings[i].Port == port {
			b = &list.Bindings[i]
		}
	}
	if b == nil || !b.Exposed || b.Addresses[0] != "127.0.0.1" || b.Program != "tunnel.test" {
		t.Fatalf("binding %+v in %+v", b, list)
	}
	_ = ln.Close()
	waitEvent(t, e.seams, contract.EventPortClosed, port, time.Now().Add(discoveryWait))

	// An IPv6 listener shows with its address; ignored ports never show.
	if ln6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		p6 := ln6.Addr().(*net.TCPAddr).Port
		waitEvent(t, e.seams, contract.EventPortOpened, p6, time.Now().Add(discoveryWait))
		_ = ln6.Close()
	}
	ign := start(t, func(s *tunnel.Settings) { s.IgnorePorts = "1-65535" })
	ign.get(t, "/api/v1/tunnel/bindings", &list)
	if len(list.Bindings) != 0 {
		t.Fatalf("ignored ports listed: %+v", list)
	}
}

// discoveryWait is how long a test waits for a scan to see a change.
const discoveryWait = 10 * time.Second

func waitEvent(t *testing.T, s *platformtest.Seams, kind string, port int, deadline time.Time) contract.Event {
	t.Helper()
	for {
		for _, ev := range s.Events() {
			if ev.Kind == kind && ev.Data["port"] == port {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event for port %d within the deadline: %+v", kind, port, s.Events())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMetricsPassPromtool moves bytes, fails a dial, and checks the
// exposition with promtool.
func TestMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed (Debian package prometheus; scripts/setup.sh installs it)")
	}
	e := start(t)
	port, _ := listen(t, func(c net.Conn) { defer c.Close(); _, _ = io.Copy(c, c) })
	ws, _, err := e.ws(t, port)
	if err != nil {
		t.Fatal(err)
	}
	_ = ws.WriteMessage(websocket.BinaryMessage, []byte("abc"))
	if _, data, err := ws.ReadMessage(); err != nil || string(data) != "abc" {
		t.Fatalf("%q %v", data, err)
	}
	ws.Close()
	if _, _, err := e.ws(t, platformtest.FreePortBase(t, 1)); err == nil {
		t.Fatal("dial of a closed port succeeded")
	}
	// The bridge counts a chunk once its write returned, which can be
	// after the echo reached this client: scrape until the counts land.
	var text []byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(e.url + "/api/v1/tunnel/metrics")
		if err != nil {
			t.Fatal(err)
		}
		text, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("content type %s", resp.Header.Get("Content-Type"))
		}
		if strings.Contains(string(text), `deckhand_tunnel_bytes_total{direction="out",port="`+strconv.Itoa(port)+`"} 3`) &&
			strings.Contains(string(text), `deckhand_tunnel_bytes_total{direction="in",port="`+strconv.Itoa(port)+`"} 3`) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range []string{
		`deckhand_tunnel_bytes_total{direction="in",port="` + strconv.Itoa(port) + `"} 3`,
		`deckhand_tunnel_bytes_total{direction="out",port="` + strconv.Itoa(port) + `"} 3`,
		`deckhand_tunnel_sessions_total{kind="websocket"} 1`,
		`deckhand_tunnel_dial_errors_total{port=`,
		`deckhand_tunnel_dial_duration_seconds_bucket`,
		`deckhand_tunnel_sessions_open`,
	} {
		if !strings.Contains(string(text), want) {
			t.Fatalf("metrics lack %s:\n%s", want, text)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestWireConstant keeps the documented control message and the wire's in
// step.
func TestWireConstant(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(wire.Control{Type: wire.CloseWrite})
	if string(raw) != `{"type":"close_write"}` {
		t.Fatal(string(raw))
	}
}

// TestHeadKeepsItsLength: a HEAD through /proxy/{port}/ answers the app's
// Content-Length every time. The proxy streams (it flushes as soon as it
// can), and a flush of a bodiless answer before the handler returns would
// send its head without the length.
func TestHeadKeepsItsLength(t *testing.T) {
	t.Parallel()
	e := start(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(3<<20))
		if r.Method != http.MethodHead {
			_, _ = w.Write(make([]byte, 3<<20))
		}
	}))
	defer app.Close()
	url := e.url + "/proxy/" + strconv.Itoa(app.Listener.Addr().(*net.TCPAddr).Port) + "/big"
	for i := range 300 {
		resp, err := http.Head(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ContentLength != 3<<20 {
			t.Fatalf("HEAD %d: %d, length %d, %v", i, resp.StatusCode, resp.ContentLength, resp.Header)
		}
	}
}
