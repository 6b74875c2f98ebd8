package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gorilla/websocket"
	"github.com/valyala/fasthttp"

	"deckhand/agent/gateway"
	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/platform/reqpolicy"
	"deckhand/services/files"
)

// countingListener counts the connections a service accepts: direct
// dispatch must not open any.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// factsService echoes what a service sees of a request, through a Fiber
// route and a net/http (adaptor) route, and has a route that answers
// without reading the body.
func factsService() []platform.Route {
	fiberFacts := func(c fiber.Ctx) error {
		h := &c.Request().Header
		return c.JSON(map[string]string{
			"host": string(h.Host()), "path": c.Path(), "uri": string(h.RequestURI()),
			"xff": c.Get("X-Forwarded-For"), "xfh": c.Get("X-Forwarded-Host"), "xfp": c.Get("X-Forwarded-Proto"),
			"xfprefix": c.Get("X-Forwarded-Prefix"), "client_ip": platform.ClientIP(c), "origin": c.Get("Origin"),
			"body": string(c.Body()),
		})
	}
	httpFacts := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"host": r.Host, "path": r.URL.Path, "raw_path": r.URL.RawPath, "query": r.URL.RawQuery,
			"xff": r.Header.Get("X-Forwarded-For"), "xfh": r.Header.Get("X-Forwarded-Host"),
			"xfprefix": r.Header.Get("X-Forwarded-Prefix"), "body": string(body),
		})
	}
	return []platform.Route{
		{Method: "GET", Path: "/facts/{rest...}", Summary: "facts", Handler: fiberFacts},
		{Method: "POST", Path: "/facts", Summary: "facts of a body", Handler: fiberFacts},
		{Method: "POST", Path: "/http", Summary: "facts through net/http", HTTP: http.HandlerFunc(httpFacts)},
		{Method: "POST", Path: "/ignore", Summary: "answers without reading the body",
			Handler: func(c fiber.Ctx) error { return c.SendString("ignored") }},
		{Method: "GET", Path: "/ws", Summary: "echoes WebSocket messages", HTTP: http.HandlerFunc(echoWS)},
		{Method: "GET", Path: "/ws-refused", Summary: "refuses the handshake",
			Handler: func(c fiber.Ctx) error { return fault.Errorf(fault.CodeForbidden, "no upgrade here") }},
	}
}

// echoWS answers each WebSocket message with itself, prefixed by what the
// service saw of the handshake's Host and X-Forwarded-Host.
func echoWS(w http.ResponseWriter, r *http.Request) {
	c, err := (&websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	for {
		typ, m, err := c.ReadMessage()
		if err != nil {
			return
		}
		if c.WriteMessage(typ, append([]byte(r.Header.Get("X-Forwarded-Host")+":"), m...)) != nil {
			return
		}
	}
}

// dispatchFixture is one facts service on its own port and two gateways
// in front of it: one dispatching in-process, one proxying.
type dispatchFixture struct {
	svc            *countingListener
	direct, proxy  string // gateway URLs
	directGW       *gateway.Gateway
	proxyGW        *gateway.Gateway
	inProcess      *gateway.InProcess
	serviceStopped atomic.Bool
}

func newDispatchFixture(t *testing.T, trust bool, streams bool) *dispatchFixture {
	t.Helper()
	policy, _ := reqpolicy.NewRequestPolicy("example.test", nil)
	cfg := platform.HostConfig{Info: platform.Info{Name: "facts"}, Logger: quiet, Policy: policy, StreamRequestBody: streams, BodyLimit: 1 << 10}
	if trust {
		cfg.ProxyHeader = "X-Forwarded-For"
	}
	host := platform.NewHost(cfg, factsService())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &dispatchFixture{svc: &countingListener{Listener: ln}}
	f.inProcess = gateway.NewInProcess(host.App(), ln.Addr())
	go func() { _ = host.Serve(f.svc) }()
	t.Cleanup(func() { _ = host.Shutdown(context.Background()) })
	addr := ln.Addr().String()
	gw := func(direct bool) (*gateway.Gateway, string) {
		c := gateway.Config{Domain: "example.test", Known: []string{"facts"}, Logger: quiet, TrustProxyHeaders: trust,
			Authorizer: admitAll{},
			Backend:    func(n string) (string, bool) { return addr, n == "facts" }}
		if direct {
			c.InProcess = func(n string) *gateway.InProcess {
				if n != "facts" || f.serviceStopped.Load() {
					return nil
				}
				return f.inProcess
			}
		}
		g := gateway.New(c)
		gln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = g.Serve(gln) }()
		t.Cleanup(func() { _ = g.Close() })
		return g, "http://" + gln.Addr().String()
	}
	f.directGW, f.direct = gw(true)
	f.proxyGW, f.proxy = gw(false)
	return f
}

// TestDirectDispatchSkipsTheServicePort: an in-process service's requests
// never open a connection to its port; the proxy's do.
func TestDirectDispatchSkipsTheServicePort(t *testing.T) {
	t.Parallel()
	f := newDispatchFixture(t, false, false)
	for i := 0; i < 20; i++ {
		st, _, raw := platformtest.Do(t, mustReq(t, "GET", f.direct+"/_/facts/facts/x", ""))
		if st != 200 {
			t.Fatalf("direct: %d %s", st, raw)
		}
	}
	if n := f.svc.n.Load(); n != 0 {
		t.Fatalf("direct dispatch opened %d connections to the service", n)
	}
	if st, _, raw := platformtest.Do(t, mustReq(t, "GET", f.proxy+"/_/facts/facts/x", "")); st != 200 {
		t.Fatalf("proxy: %d %s", st, raw)
	}
	if f.svc.n.Load() == 0 {
		t.Fatal("the proxy reached the service without a connection: the counter is broken")
	}
}

func mustReq(t *testing.T, method, url, body string, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// TestServiceSeesTheSameFactsDirectAndProxied: Host, X-Forwarded-*, path,
// query, body and the policy's verdict are the same both ways, for Fiber
// and net/http routes, by path and by Host, with a client's forged
// forwarding headers. ClientIP too with --trust-proxy-headers; without
// it, the proxied service sees its peer, the gateway (127.0.0.1), and a
// directly dispatched one sees the gateway's peer, the client (here also
// 127.0.0.1; TestRemoteClientFacts has a remote one).
func TestServiceSeesTheSameFactsDirectAndProxied(t *testing.T) {
	t.Parallel()
	gwHost := []string{"Host", "gw.example.test:7700"} // the same Host for both gateways
	forged := []string{"X-Forwarded-For", "6.6.6.6", "X-Forwarded-Host", "evil.test", "X-Forwarded-Prefix", "/evil", "X-Real-Ip", "6.6.6.6"}
	cases := []struct {
		name, method, path, body string
		hdr                      []string
	}{
		{"path routing", "GET", "/_/facts/facts/a%2Fb/c?q=1&r=%20", "", gwHost},
		{"host routing", "GET", "/facts/z?x=y", "", []string{"Host", "p-c-facts-1.srv.example.test"}},
		{"forged forwarding headers", "GET", "/_/facts/facts/f", "", append(forged, gwHost...)},
		{"own origin", "GET", "/facts/o", "", []string{"Host", "p-c-facts-1.srv.example.test", "Origin", "http://p-c-facts-1.srv.example.test"}},
		{"body", "POST", "/_/facts/facts", "hello", gwHost},
		{"net/http route", "POST", "/_/facts/http?k=v", "through the adaptor", append(forged, gwHost...)},
	}
	for _, trust := range []bool{false, true} {
		f := newDispatchFixture(t, trust, false)
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s trust=%v", tc.name, trust), func(t *testing.T) {
				ds, dj, draw := platformtest.Do(t, mustReq(t, tc.method, f.direct+tc.path, tc.body, tc.hdr...))
				ps, pj, praw := platformtest.Do(t, mustReq(t, tc.method, f.proxy+tc.path, tc.body, tc.hdr...))
				if ds != 200 || ps != 200 {
					t.Fatalf("direct %d %s; proxy %d %s", ds, draw, ps, praw)
				}
				if dj["host"] != pj["host"] || !strings.HasPrefix(fmt.Sprint(dj["host"]), "127.0.0.1:") {
					t.Errorf("host: direct %v proxy %v", dj["host"], pj["host"])
				}
				for k, v := range pj {
					if k == "host" {
						continue
					}
					if dj[k] != v {
						t.Errorf("%s: direct %q, proxy %q", k, dj[k], v)
					}
				}
				if len(dj) != len(pj) {
					t.Errorf("direct %v, proxy %v", dj, pj)
				}
				// With --trust-proxy-headers a loopback peer is the platform
				// proxy, whose X-Forwarded-For names the client.
				if (!trust && strings.Contains(draw, "6.6.6.6")) || strings.Contains(draw, "evil") {
					t.Errorf("a client's forwarding header reached the service: %s", draw)
				}
			})
		}
	}
}

// TestRemoteClientFacts: a client on another machine (a request context
// with a remote peer, served by the gateway's handler) gets through the
// service's policy with its own origin, one not under --domain: the
// service judges it against X-Forwarded-Host for a dispatched request as
// for a proxied one (without reqpolicy.MarkGatewayDispatch it would not
// trust that header from a remote peer: 403). ClientIP is the client.
func TestRemoteClientFacts(t *testing.T) {
	t.Parallel()
	for _, trust := range []bool{false, true} {
		f := newDispatchFixture(t, trust, false)
		for _, g := range []*gateway.Gateway{f.directGW, f.proxyGW} {
			var req fasthttp.Request
			req.Header.SetMethod("GET")
			// An origin allowed only as the request's own (not under
			// --domain): the service must judge it against the Host the
			// client sent, as on a proxied connection.
			req.SetRequestURI("/_/facts/facts/r")
			req.Header.SetHost("0.0.0.0:7700")
			req.Header.Set("Origin", "http://0.0.0.0:7700")
			req.Header.Set("X-Forwarded-For", "6.6.6.6")
			var ctx fasthttp.RequestCtx
			ctx.Init(&req, &net.TCPAddr{IP: net.ParseIP("203.0.113.9"), Port: 5555}, nil)
			g.Handler()(&ctx)
			if ctx.Response.StatusCode() != 200 {
				t.Fatalf("trust=%v direct=%v: %d %s", trust, g == f.directGW, ctx.Response.StatusCode(), ctx.Response.Body())
			}
			var facts map[string]string
			if err := json.Unmarshal(ctx.Response.Body(), &facts); err != nil {
				t.Fatal(err)
			}
			if facts["xff"] != "203.0.113.9" || facts["xfh"] != "0.0.0.0:7700" || facts["origin"] != "http://0.0.0.0:7700" {
				t.Errorf("trust=%v direct=%v: %v", trust, g == f.directGW, facts)
			}
			want := "203.0.113.9"
			if g == f.proxyGW && !trust {
				want = "127.0.0.1" // the proxied service's peer is the gateway
			}
			if facts["client_ip"] != want {
				t.Errorf("trust=%v direct=%v: client_ip %s, want %s", trust, g == f.directGW, facts["client_ip"], want)
			}
		}
	}
}

// TestDirectDispatchBodies: a service that reads bodies whole keeps its
// limit (a larger or chunked body takes the proxy and gets the service
// server's 413), and a body a handler left unread is never taken for the
// next request on the connection.
func TestDirectDispatchBodies(t *testing.T) {
	t.Parallel()
	f := newDispatchFixture(t, false, false)
	big := strings.Repeat("x", 2<<10) // over the fixture's 1 KiB limit
	for _, url := range []string{f.direct, f.proxy} {
		st, body, raw := platformtest.Do(t, mustReq(t, "POST", url+"/_/facts/facts", big))
		if st != http.StatusRequestEntityTooLarge || body["code"] != fault.CodePayloadTooLarge {
			t.Errorf("%s: %d %s", url, st, raw)
		}
	}
	before := f.svc.n.Load()
	if st, body, raw := platformtest.Do(t, mustReq(t, "POST", f.direct+"/_/facts/facts", "small")); st != 200 || body["body"] != "small" {
		t.Errorf("small body: %d %s", st, raw)
	}
	if f.svc.n.Load() != before {
		t.Error("a small body did not go direct")
	}

	// An unread body that looks like a request: the answer to the next
	// real request on the connection must be its own.
	smuggled := "GET /_/facts/facts/smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	for _, streams := range []bool{false, true} {
		g := newDispatchFixture(t, false, streams)
		c, err := net.Dial("tcp", strings.TrimPrefix(g.direct, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /_/facts/ignore HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", len(smuggled), smuggled)
		fmt.Fprintf(c, "GET /_/facts/facts/real HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		br := bufio.NewReader(c)
		for i, want := range []string{"ignored", `"path":"/facts/real"`} {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				if i == 1 && errors.Is(err, io.EOF) {
					break // closed instead of reading on: also safe
				}
				t.Fatalf("streams=%v response %d: %v", streams, i, err)
			}
			b, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(b), want) {
				t.Fatalf("streams=%v response %d: %s, want %s", streams, i, b, want)
			}
		}
	}
}

// TestStoppedInProcessServiceFallsBack: while no host serves (a crash,
// a restart) the gateway proxies, and a dead port answers 502.
func TestStoppedInProcessServiceFallsBack(t *testing.T) {
	t.Parallel()
	f := newDispatchFixture(t, false, false)
	f.serviceStopped.Store(true)
	_ = f.svc.Close()
	st, body, raw := platformtest.Do(t, mustReq(t, "GET", f.direct+"/_/facts/facts/x", ""))
	if st != http.StatusBadGateway || body["code"] != fault.CodeBackend {
		t.Fatalf("%d %s", st, raw)
	}
}

// TestFilesThroughDirectDispatch: the real files service (it streams
// bodies) dispatched in-process takes an upload larger than any buffer and
// gives it back whole, answers WebDAV and streams server-sent events, with
// no connection to its port; closing the gateway ends the event stream.
// filesDirect is the real files service, dispatched in-process by a
// gateway; it returns the gateway's base URL for the service, the
// gateway, and the service port's connection counter.
func filesDirect(t *testing.T) (string, *gateway.Gateway, *countingListener) {
	t.Helper()
	svc, err := files.New(platformtest.ServiceDeps(t, "files"), &files.Settings{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	host, err := contract.NewServiceHost(svc, platformtest.ServiceDeps(t, "files"))
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	cl := &countingListener{Listener: ln}
	d := gateway.NewInProcess(host.App(), ln.Addr())
	go func() { _ = host.Serve(cl) }()
	t.Cleanup(func() { _ = host.Shutdown(context.Background()) })
	base, g := directGateway(t, "files", d, ln.Addr().String())
	return base, g, cl
}

// directGateway serves a gateway (--domain localhost, loopback clients)
// that dispatches service name to d, with addr as its proxy address; it
// returns the service's base URL through the gateway.
func directGateway(t *testing.T, name string, d *gateway.InProcess, addr string) (string, *gateway.Gateway) {
	t.Helper()
	g := gateway.New(gateway.Config{Domain: "localhost", Known: []string{name}, Logger: quiet,
		Backend:   func(string) (string, bool) { return addr, true },
		InProcess: func(string) *gateway.InProcess { return d }})
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(gln) }()
	t.Cleanup(func() { _ = g.Close() })
	return "http://" + gln.Addr().String() + "/_/" + name, g
}

func TestFilesThroughDirectDispatch(t *testing.T) {
	t.Parallel()
	base, g, cl := filesDirect(t)

	data := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16*3) // 9 MiB
	sum := sha256.Sum256(data)
	req, _ := http.NewRequest("PUT", base+"/api/v1/files/content?path=/big.bin", bytes.NewReader(data))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Get(base + "/api/v1/files/content?path=/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, _ := io.Copy(h, resp.Body)
	resp.Body.Close()
	if n != int64(len(data)) || hex.EncodeToString(h.Sum(nil)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("download: %d bytes, want %d, same content %v", n, len(data), bytes.Equal(h.Sum(nil), sum[:]))
	}

	// WebDAV (a net/http route through Fiber's adaptor, a WebDAV method).
	req, _ = http.NewRequest("PROPFIND", base+"/dav/big.bin", nil)
	req.Header.Set("Depth", "0")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMultiStatus || !strings.Contains(string(b), "big.bin") {
		t.Fatalf("PROPFIND: %d %s", resp.StatusCode, b)
	}

	// Server-sent events arrive as they happen, not when the stream ends.
	resp, err = http.Get(base + "/api/v1/files/watch?path=/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	readUntil := func(want string) {
		t.Helper()
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("watch stream ended before %q: %v", want, err)
			}
			if strings.Contains(line, want) {
				return
			}
		}
	}
	readUntil("event: ready")
	req, _ = http.NewRequest("PUT", base+"/api/v1/files/content?path=/new.txt", strings.NewReader("hi"))
	if st, _, raw := platformtest.Do(t, req); st != 201 {
		t.Fatalf("upload: %d %s", st, raw)
	}
	readUntil("new.txt")
	if cl.n.Load() != 0 {
		t.Fatalf("%d connections reached the files port", cl.n.Load())
	}
	// Closing the gateway ends a stream it dispatched.
	_ = g.Close()
	if _, err := io.Copy(io.Discard, events); err != nil && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "reset") {
		t.Logf("stream ended with %v", err)
	}
}

// TestDirectUploadWithFlatMemory: an upload with Content-Length to the
// files service dispatched in-process streams from the client's connection
// to the file, as a chunked one does through the proxy, while the
// process's heap and RSS stay flat.
// Not parallel: it measures the whole process.
func TestDirectUploadWithFlatMemory(t *testing.T) {
	base, _, cl := filesDirect(t)
	const size = 256 << 20
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer c.CloseIdleConnections()
	for _, chunked := range []bool{false, true} {
		s := sampleMemory()
		resp, b := uploadZeros(t, c, "PUT", base+"/api/v1/files/content?path=/up.bin", size, chunked, false)
		heap, rs := s.growth()
		t.Logf("chunked=%v: heap grew %d KiB, RSS %d KiB", chunked, heap>>10, rs>>10)
		if resp.StatusCode/100 != 2 || !strings.Contains(string(b), fmt.Sprint(size)) {
			t.Fatalf("chunked=%v: %d %s", chunked, resp.StatusCode, b)
		}
		if heap > memoryBound || rs > memoryBound {
			t.Fatalf("chunked=%v: memory grew with the body: heap +%d MiB, RSS +%d MiB", chunked, heap>>20, rs>>20)
		}
		// A body of declared length goes direct; a chunked one through
		// the proxy (see InProcess.takes).
		if n := cl.n.Load(); (n == 0) == chunked {
			t.Fatalf("chunked=%v: %d connections reached the files port", chunked, n)
		}
	}
}

// TestPanicInDispatchedHandler: a panic that escapes a service's handler
// (a bare Fiber app, no Host kernel to recover it) is a 502 for that
// request, and the gateway goes on serving.
func TestPanicInDispatchedHandler(t *testing.T) {
	t.Parallel()
	app := fiber.New()
	app.Get("/boom", func(fiber.Ctx) error { panic("boom") })
	app.Get("/ok", func(c fiber.Ctx) error { return c.SendString("ok") })
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	base, _ := directGateway(t, "bare", gateway.NewInProcess(app, ln.Addr()), ln.Addr().String())
	if st, body, raw := platformtest.Do(t, mustReq(t, "GET", base+"/boom", "")); st != http.StatusBadGateway || body["code"] != fault.CodeBackend {
		t.Fatalf("panic: %d %s", st, raw)
	}
	if st, _, raw := platformtest.Do(t, mustReq(t, "GET", base+"/ok", "")); st != 200 || raw != "ok" {
		t.Fatalf("after the panic: %d %s", st, raw)
	}
}

// waitTunnels waits until g has want tunnels open (a closed WebSocket's
// end reaches the gateway after the client's close returns).
func waitTunnels(t *testing.T, g *gateway.Gateway, want int) {
	t.Helper()
	for i := 0; g.Tunnels() != want; i++ {
		if i == 2000 {
			t.Fatalf("%d tunnels open, want %d", g.Tunnels(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInProcessUpgradeTakesTheClientConnection: a WebSocket to a service
// in the gateway's process is served on the client's own connection, with
// no connection to the service's port, rewritten as for the proxy and
// counted as a tunnel while open; a refused handshake is an ordinary
// answer; the proxied path (a service in a process of its own, --isolate)
// still reaches the port and works the same.
func TestInProcessUpgradeTakesTheClientConnection(t *testing.T) {
	t.Parallel()
	f := newDispatchFixture(t, false, false)
	for _, tc := range []struct {
		name   string
		base   string
		gw     *gateway.Gateway
		direct bool
	}{
		{"direct", f.direct, f.directGW, true},
		{"proxied", f.proxy, f.proxyGW, false},
	} {
		before := f.svc.n.Load()
		gln := strings.TrimPrefix(tc.base, "http://")
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+gln+"/_/facts/ws", nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := tc.gw.Tunnels(); n != 1 {
			t.Fatalf("%s: %d tunnels while a WebSocket is open, want 1", tc.name, n)
		}
		for _, m := range []string{"one", strings.Repeat("x", 1<<20)} {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
				t.Fatal(err)
			}
			if _, got, err := ws.ReadMessage(); err != nil || string(got) != gln+":"+m {
				t.Fatalf("%s: echo of %d bytes: %d bytes, %v", tc.name, len(m), len(got), err)
			}
		}
		_ = ws.Close()
		waitTunnels(t, tc.gw, 0)
		opened := f.svc.n.Load() - before
		if tc.direct && opened != 0 {
			t.Fatalf("direct: the upgrade opened %d connections to the service's port", opened)
		}
		if !tc.direct && opened == 0 {
			t.Fatal("proxied: no connection to the service's port: the counter is broken")
		}
		_, resp, err := websocket.DefaultDialer.Dial("ws://"+gln+"/_/facts/ws-refused", nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s: refused upgrade: %v %v", tc.name, resp, err)
		}
		var e struct {
			Code string `json:"code"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Code != fault.CodeForbidden {
			t.Fatalf("%s: refusal body: %+v %v", tc.name, e, err)
		}
		resp.Body.Close()
		waitTunnels(t, tc.gw, 0)
	}
}

// TestCloseEndsInProcessWebSocket: closing the gateway ends a WebSocket a
// service in its process serves on the client's connection, and a
// handshake after Shutdown is refused.
func TestCloseEndsInProcessWebSocket(t *testing.T) {
	t.Parallel()
	f := newDispatchFixture(t, false, false)
	gln := strings.TrimPrefix(f.direct, "http://")
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+gln+"/_/facts/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = f.directGW.Close()
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("the WebSocket outlived the gateway's Close")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the WebSocket stayed open after the gateway's Close")
	}
	waitTunnels(t, f.directGW, 0)
}

// TestCloseDuringInProcessHandshake: Close while a service's handler is
// still answering a WebSocket handshake (the connection is a tunnel, not
// yet hijacked) returns, ends the client's connection, and leaves no
// tunnel once the handler gives up.
func TestCloseDuringInProcessHandshake(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	app := fiber.New()
	app.Get("/ws", func(c fiber.Ctx) error {
		close(entered)
		<-release
		return c.SendStatus(http.StatusForbidden)
	})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	base, g := directGateway(t, "slow", gateway.NewInProcess(app, ln.Addr()), ln.Addr().String())
	dialed := make(chan error, 1)
	go func() {
		_, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
		dialed <- err
	}()
	<-entered
	if n := g.Tunnels(); n != 1 {
		t.Fatalf("%d tunnels during the handshake, want 1", n)
	}
	closed := make(chan struct{})
	go func() { _ = g.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(60 * time.Second): // hang guard
		close(release)
		t.Fatal("Close did not return while a handshake was in a service's handler")
	}
	close(release)
	if err := <-dialed; err == nil {
		t.Fatal("the handshake succeeded through a closed gateway")
	}
	waitTunnels(t, g, 0)
}
