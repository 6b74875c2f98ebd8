package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/agent/gateway"
)

// withBackend routes one more service name to addr.
func withBackend(name, addr string) func(*gateway.Config) {
	return func(c *gateway.Config) {
		prev := c.Backend
		c.Backend = func(n string) (string, bool) {
			if n == name {
				return addr, true
			}
			return prev(n)
		}
	}
}

// bulk is a stand-in service that sends and swallows large bodies:
// GET /bytes?n=N&chunked=1 sends N zero bytes, POST counts what it got.
func bulk(t testing.TB) string {
	zeros := make([]byte, 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			_, _ = io.WriteString(w, strconv.FormatInt(n, 10))
			return
		}
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		for n > 0 {
			b := zeros
			if int64(len(b)) > n {
				b = b[:n]
			}
			if _, err := w.Write(b); err != nil {
				return
			}
			n -= int64(len(b))
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// memSampler records the largest heap in use and RSS of this process (the
// gateway runs in it) while a transfer runs.
type memSampler struct {
	stop           chan struct{}
	done           chan struct{}
	heap0, rss0    uint64
	maxHeap, maxRS uint64
}

func sampleMemory() *memSampler {
	runtime.GC()
	s := &memSampler{stop: make(chan struct{}), done: make(chan struct{})}
	s.heap0, s.rss0 = heapInUse(), rss()
	go func() {
		defer close(s.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if h := heapInUse(); h > s.maxHeap {
				s.maxHeap = h
			}
			if r := rss(); r > s.maxRS {
				s.maxRS = r
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// growth is how far heap and RSS rose above where they started.
func (s *memSampler) growth() (heap, rssGrowth int64) {
	close(s.stop)
	<-s.done
	return int64(s.maxHeap) - int64(s.heap0), int64(s.maxRS) - int64(s.rss0)
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

const (
	gib         = 1 << 30
	memoryBound = 32 << 20
)

// TestLargeBodiesStreamWithFlatMemory: 1 GiB down and 1 GiB up through the
// gateway, with and without Content-Length, while the heap and RSS of the
// process the gateway runs in stay within 32 MiB of where they started.
// Not parallel: it measures the whole process.
func TestLargeBodiesStreamWithFlatMemory(t *testing.T) {
	f := newFixture(t, "", "", withBackend("vault", bulk(t)))
	c := &http.Client{Transport: &http.Transport{DisableCompression: true, ExpectContinueTimeout: 10 * time.Second}}
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		name    string
		upload  bool
		chunked bool
	}{
		{"download", false, false},
		{"download chunked", false, true},
		{"upload", true, false},
		{"upload chunked", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sampleMemory()
			var got int64
			if tc.upload {
				// Expect: 100-continue: the gateway answers it, the service never sees it.
				resp, b := uploadZeros(t, c, http.MethodPost, f.url+"/_/vault/up", gib, tc.chunked, true)
				got, _ = strconv.ParseInt(string(b), 10, 64)
				if resp.StatusCode != 200 {
					t.Fatalf("upload: %d %s", resp.StatusCode, b)
				}
			} else {
				u := f.url + "/_/vault/bytes?n=" + strconv.Itoa(gib)
				if tc.chunked {
					u += "&chunked=1"
				}
				resp, err := c.Get(u)
				if err != nil {
					t.Fatal(err)
				}
				got, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("download: %d %v", resp.StatusCode, err)
				}
				if cl := resp.Header.Get("Content-Length"); tc.chunked == (cl != "") {
					t.Errorf("Content-Length %q (chunked %v)", cl, tc.chunked)
				}
			}
			heap, rs := s.growth()
			t.Logf("%d bytes; heap grew %d KiB, RSS %d KiB", got, heap>>10, rs>>10)
			if got != gib {
				t.Fatalf("%d bytes went through, want %d", got, gib)
			}
			if heap > memoryBound || rs > memoryBound {
				t.Fatalf("memory grew with the body: heap +%d MiB, RSS +%d MiB (bound %d MiB)", heap>>20, rs>>20, memoryBound>>20)
			}
		})
	}
}

// uploadZeros sends size zero bytes to url, with Content-Length or
// chunked, and returns the response and its body.
func uploadZeros(t *testing.T, c *http.Client, method, url string, size int64, chunked, expectContinue bool) (*http.Response, []byte) {
	t.Helper()
	body := io.LimitReader(zeroReader{}, size)
	req, _ := http.NewRequest(method, url, body)
	req.ContentLength = size
	if expectContinue {
		req.Header.Set("Expect", "100-continue")
	}
	if chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(body)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestStreamedResponseIsFlushed: a server-sent event goes out as the
// service writes it, not when the response ends.
func TestStreamedResponseIsFlushed(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select { // the second event only once the client has the first
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: two\n\n")
	}))
	defer srv.Close()
	f := newFixture(t, "", "", withBackend("vault", strings.TrimPrefix(srv.URL, "http://")))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/_/vault/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first event: %q %v (held back until the stream ends?)", line, err)
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "\ndata: two\n\n" {
		t.Fatalf("rest: %q %v", rest, err)
	}
}

// stalledDownload asks for 1 GiB through the gateway and reads only the
// head, leaving the body in the kernel's buffers.
func stalledDownload(t *testing.T, f *fixture) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /_/vault/bytes?n=%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", gib)
	br := bufio.NewReader(conn)
	if _, err := br.Peek(12); err != nil {
		t.Fatal(err)
	}
	return conn, br
}

// TestSlowClientDoesNotStallOthers: a client that stops reading a large
// download holds its own connection only.
func TestSlowClientDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "", withBackend("vault", bulk(t)))
	stalledDownload(t, f)
	c := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				resp, err := c.Get(f.url + "/_/files/api/v1/version")
				if err != nil {
					failed.Add(1)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d requests failed beside a stalled download", n)
	}
}

// TestHeadKeepsContentLength: a HEAD through the gateway has the
// service's headers and no body.
func TestHeadKeepsContentLength(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "", withBackend("vault", bulk(t)))
	resp, err := http.Head(f.url + "/_/vault/bytes?n=12345")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != 12345 || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("HEAD: %d Content-Length %d %v", resp.StatusCode, resp.ContentLength, resp.Header)
	}
}

// TestErrorBodies: the gateway's own answers are the container error body,
// byte for byte as platform writes it, with its headers.
func TestErrorBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "p", "c")
	cases := []struct {
		host, path string
		status     int
		body       string
	}{
		{"", "/_/vault/x", 404, `{"code":"NOT_FOUND","details":"vault","message":"service vault is not running on this agent"}`},
		{"", "/_/terminal/x", 502, `{"code":"BACKEND_ERROR","details":"terminal","message":"service terminal is not answering (it may be restarting); try again shortly"}`},
		{"evil.example", "/_/cron/health", 421, `{"code":"MISDIRECTED_REQUEST","details":"host","message":"host \"evil.example\" is not served here (served: loopback names, names under example.test, hosts of --allowed-origins)"}`},
		{"p-x-cron-1.s.example.test", "/health", 404, `{"code":"NOT_FOUND","details":"host","message":"host p-x-cron-1.s.example.test names another container; this agent serves project p, container c"}`},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodGet, f.url+tc.path, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || string(b) != tc.body+"\n" ||
			resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d %v\n%s", tc.host, tc.path, resp.StatusCode, resp.Header, b)
		}
	}
}

// TestWebSocketEdges: a service that speaks first is heard, and one that
// refuses the upgrade is answered as an ordinary response.
func TestWebSocketEdges(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			http.Error(w, "no upgrade for you", http.StatusForbidden)
			return
		}
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.WriteMessage(websocket.TextMessage, []byte("hello first"))
		_, _, _ = c.ReadMessage()
	}))
	defer srv.Close()
	f := newFixture(t, "", "", withBackend("vault", strings.TrimPrefix(srv.URL, "http://")))
	ws := "ws" + strings.TrimPrefix(f.url, "http")
	c, _, err := websocket.DefaultDialer.Dial(ws+"/_/vault/talk", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, msg, err := c.ReadMessage()
	c.Close()
	if err != nil || string(msg) != "hello first" {
		t.Fatalf("service's first message: %q %v", msg, err)
	}
	_, resp, err := websocket.DefaultDialer.Dial(ws+"/_/vault/refuse", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("refused upgrade: %v %v", resp, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "no upgrade for you\n" {
		t.Fatalf("refusal body %q", b)
	}
}

// TestNoLeaksAfterManyRequestsAndWebSockets: once clients close, nothing of
// the gateway is left running: no splicing goroutine, no tunnel.
// Not parallel: it counts the whole process's goroutines.
func TestNoLeaksAfterManyRequestsAndWebSockets(t *testing.T) {
	f := newFixture(t, "p", "c")
	before := runtime.NumGoroutine()
	const n = 100
	tr := &http.Transport{}
	c := &http.Client{Transport: tr}
	for i := range n {
		resp, err := c.Get(f.url + "/_/notes/x" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		hdr := http.Header{}
		u := "ws" + strings.TrimPrefix(f.url, "http") + "/_/notes/ws"
		if i%2 == 1 {
			hdr.Set("Host", "p-c-notes-1.srv.example.test")
			u = "ws" + strings.TrimPrefix(f.url, "http") + "/ws"
		}
		ws, _, err := websocket.DefaultDialer.Dial(u, hdr)
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, m, err := ws.ReadMessage(); err != nil || string(m) != "echo:hi" {
			t.Fatalf("%q %v", m, err)
		}
		ws.Close()
	}
	tr.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for {
		inGateway := gatewayGoroutines()
		if f.gw.Tunnels() == 0 && inGateway == 0 && runtime.NumGoroutine() < before+n/2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d requests and WebSockets: %d tunnels open, %d goroutines in the gateway, %d goroutines (%d before)",
				n, f.gw.Tunnels(), inGateway, runtime.NumGoroutine(), before)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gatewayGoroutines counts goroutines running gateway code (splice,
// upgrade, forward) other than the one in Serve and tests' own (an
// internal test of package gateway waiting in t.Parallel).
func gatewayGoroutines() int {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "deckhand/agent/gateway.") && !strings.Contains(g, "deckhand/agent/gateway.(*Gateway).Serve(") &&
			!strings.Contains(g, "testing.tRunner(") {
			n++
		}
	}
	return n
}

// TestCloseEndsStreamsInFlight: Close (the supervisor's last resort after
// the shutdown grace) does not leave a stalled download running.
func TestCloseEndsStreamsInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "", withBackend("vault", bulk(t)))
	conn, br := stalledDownload(t, f)
	_ = f.gw.Close()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the download still ran after Close (%d bytes read)", n)
	}
	if n >= gib {
		t.Fatalf("the whole body came through (%d bytes) despite Close", n)
	}
}

// TestServiceCloseEndsClientConnection: a service that drops an upgraded
// connection (no close frame) ends the client's connection at once, even
// while the client says nothing and keeps its side open.
func TestServiceCloseEndsClientConnection(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte("bye"))
		c.NetConn().Close()
	}))
	defer srv.Close()
	f := newFixture(t, "", "", withBackend("vault", strings.TrimPrefix(srv.URL, "http://")))
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.url, "http")+"/_/vault/drop", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, msg, err := c.ReadMessage(); err != nil || string(msg) != "bye" {
		t.Fatalf("first message %q %v", msg, err)
	}
	_, _, err = c.ReadMessage()
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the client's connection stayed open after the service dropped it: %v", err)
	}
}

// TestUploadAnsweredWithoutReading: an upload to a route that answers
// before reading the body (a refused path, a method the route does not
// take) gets that route's answer through the gateway, not 502, chunked or
// with a declared length, proxied to the service's port or dispatched to
// an in-process service; an upload the route reads still works.
func TestUploadAnsweredWithoutReading(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "")
	direct, _, cl := filesDirect(t)
	proxied, _ := directGateway(t, "files", nil, cl.Addr().String())
	c := &http.Client{Transport: &http.Transport{Proxy: nil}}
	for _, base := range []string{proxied, direct} {
		for _, chunked := range []bool{true, false} {
			for _, size := range []int64{1 << 10, 8 << 20, 64 << 20} {
				resp, body := uploadZeros(t, c, "PUT", base+"/api/v1/files/content?path=relative.bin", size, chunked, false)
				if resp.StatusCode != 400 || !strings.Contains(string(body), `"code":"INVALID"`) {
					t.Errorf("%s chunked=%v %d bytes, refused path: %d %s", base, chunked, size, resp.StatusCode, body)
				}
			}
			resp, body := uploadZeros(t, c, "PUT", base+"/api/v1/files/content?path=/ok.bin", 3<<20, chunked, false)
			if resp.StatusCode/100 != 2 {
				t.Errorf("%s chunked=%v, upload: %d %s", base, chunked, resp.StatusCode, body)
			}
		}
	}
	resp, body := uploadZeros(t, c, "POST", f.url+"/_/cron/health", 4<<20, true, false)
	if resp.StatusCode != 405 {
		t.Errorf("chunked POST to a GET route: %d %s", resp.StatusCode, body)
	}
}
