package proxy_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/control/proxy"
)

// TestBodiesPassWhole sends bodies both ways through the proxy into a real
// agent: a large download whole and by Range (the spliced path), a small
// one, a HEAD, an upload, and downloads the client drops halfway, after
// which the container's few connections are all free again.
func TestBodiesPassWhole(t *testing.T) {
	gw := agent(t, "proj", "ctr1")
	cat := &catalog{byID: map[string]*proxy.Container{"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running", Addr: gw}}}
	defer proxy.SetConnWait(2 * time.Second)()
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test", MaxConnsPerContainer: 2}, cat))
	host := "proj-ctr1-files-1.local.deckhand.test"

	dir := t.TempDir()
	big := make([]byte, 24<<20+7)
	_, _ = rand.Read(big)
	path := filepath.Join(dir, "big")
	if err := os.WriteFile(path, big, 0o644); err != nil {
		t.Fatal(err)
	}
	do := func(method, target string, body io.Reader, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+px+target, body)
		req.Host = host
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		return resp
	}
	read := func(resp *http.Response) []byte {
		t.Helper()
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("body: %v after %d bytes", err, len(b))
		}
		return b
	}
	content := "/api/v1/files/content?path=" + path

	for i := 0; i < 3; i++ { // again and again on the pooled connections
		resp := do("GET", content, nil)
		if got := read(resp); resp.StatusCode != 200 || sha256.Sum256(got) != sha256.Sum256(big) {
			t.Fatalf("download %d: %d, %d bytes, want %d", i, resp.StatusCode, len(got), len(big))
		}
	}
	from, to := 3<<20+5, 20<<20+11
	resp := do("GET", content, nil, "Range", "bytes="+strconv.Itoa(from)+"-"+strconv.Itoa(to))
	if got := read(resp); resp.StatusCode != 206 || !bytes.Equal(got, big[from:to+1]) ||
		resp.Header.Get("Content-Range") != "bytes "+strconv.Itoa(from)+"-"+strconv.Itoa(to)+"/"+strconv.Itoa(len(big)) {
		t.Fatalf("range: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Range"), len(got))
	}
	resp = do("GET", content, nil, "Range", "bytes=10-19")
	if got := read(resp); resp.StatusCode != 206 || !bytes.Equal(got, big[10:20]) {
		t.Fatalf("small range: %d %q", resp.StatusCode, got)
	}
	resp = do("HEAD", content, nil)
	if got := read(resp); resp.StatusCode != 200 || len(got) != 0 || resp.ContentLength != int64(len(big)) {
		t.Fatalf("HEAD: %d, length %d, %d bytes of body", resp.StatusCode, resp.ContentLength, len(got))
	}
	up := filepath.Join(dir, "up")
	resp = do("PUT", "/api/v1/files/content?path="+up, bytes.NewReader(big[:5<<20]))
	if b := read(resp); resp.StatusCode/100 != 2 {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	if got, err := os.ReadFile(up); err != nil || !bytes.Equal(got, big[:5<<20]) {
		t.Fatalf("uploaded file: %d bytes, %v", len(got), err)
	}

	// Clients that leave halfway free their connections to the agent:
	// with two allowed, later requests still get through.
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", px)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "GET "+content+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		_, _ = io.ReadFull(c, make([]byte, 64<<10))
		c.Close()
	}
	for i := 0; i < 4; i++ {
		resp := do("GET", "/api/v1/files/stat?path=/", nil)
		if b := read(resp); resp.StatusCode != 200 {
			t.Fatalf("after dropped downloads: %d %s", resp.StatusCode, b)
		}
	}
}

// TestAgentConnections: sequential requests share one connection to the
// agent; one the agent closed while idle is not used again, whatever the
// request; and past the container's bound, a request waits, then gets 503.
func TestAgentConnections(t *testing.T) {
	var conns atomic.Int32
	hold := make(chan struct{})
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-hold
		}
		body, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+string(body))
	}))
	app.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	app.Start()
	defer app.Close()
	defer close(hold)
	cat := &catalog{byID: map[string]*proxy.Container{"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running",
		Addr: app.Listener.Addr().String()}}}
	defer proxy.SetConnWait(time.Second)()
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test", MaxConnsPerContainer: 1}, cat))
	cl := &http.Client{Timeout: 30 * time.Second}
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+px+path, strings.NewReader(body))
		req.Host = "proj-ctr1-files-1.local.deckhand.test"
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for i := 0; i < 50; i++ {
		if code, b := do("GET", "/", ""); code != 200 || b != "GET " {
			t.Fatalf("GET %d: %d %q", i, code, b)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("50 requests opened %d connections to the agent, want 1", n)
	}
	// The agent drops its idle connections; neither a GET nor a POST
	// (whose body cannot be sent twice) fails for it.
	app.CloseClientConnections()
	time.Sleep(100 * time.Millisecond)
	if code, b := do("POST", "/", "once"); code != 200 || b != "POST once" {
		t.Fatalf("POST after the agent closed the idle connection: %d %q", code, b)
	}
	app.CloseClientConnections()
	time.Sleep(100 * time.Millisecond)
	if code, b := do("GET", "/", ""); code != 200 || b != "GET " {
		t.Fatalf("GET after the agent closed the idle connection: %d %q", code, b)
	}

	// The one connection is held: the next request waits, then 503.
	started := make(chan struct{})
	go func() {
		close(started)
		req, _ := http.NewRequest("GET", "http://"+px+"/hold", nil)
		req.Host = "proj-ctr1-files-1.local.deckhand.test"
		if resp, err := cl.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	code, b := do("GET", "/", "")
	if code != 503 || !strings.Contains(b, "connections open") || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("past the connection bound: %d %q after %s", code, b, time.Since(start))
	}
}

// TestAgentConnectionsUnderChurn sends many requests at once, GETs and
// POSTs with bodies, through the proxy to an agent that closes idle
// connections (later than the proxy drops them, as the real agent's 120 s
// against the proxy's 30 s) and answers some requests with Connection:
// close, while requests wait for the container's few connections; every
// request gets its own answer whole.
func TestAgentConnectionsUnderChurn(t *testing.T) {
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("close") != "" {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(body))
	}))
	app.Config.IdleTimeout = 300 * time.Millisecond
	app.Start()
	defer proxy.SetIdleTTL(20 * time.Millisecond)()
	defer app.Close()
	cat := &catalog{byID: map[string]*proxy.Container{"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running",
		Addr: app.Listener.Addr().String()}}}
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test", MaxConnsPerContainer: 4}, cat))
	const clients, each = 8, 60
	errs := make(chan error, clients)
	for g := 0; g < clients; g++ {
		go func() {
			cl := &http.Client{Timeout: 30 * time.Second}
			for i := 0; i < each; i++ {
				method, body, path := "GET", "", "/"+strconv.Itoa(g)+"-"+strconv.Itoa(i)
				if i%2 == 1 {
					method, body = "POST", strings.Repeat("x", i*100)
				}
				q := ""
				if i%7 == 0 {
					q = "?close=1"
				}
				req, _ := http.NewRequest(method, "http://"+px+path+q, strings.NewReader(body))
				req.Host = "proj-ctr1-files-1.local.deckhand.test"
				resp, err := cl.Do(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := method + " " + path + " " + body; err != nil || resp.StatusCode != 200 || string(b) != want {
					errs <- fmt.Errorf("%s %s: %d %q %v", method, path, resp.StatusCode, b, err)
					return
				}
				if i%5 == 0 {
					time.Sleep(30 * time.Millisecond) // past the agent's idle timeout
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < clients; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
