package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/control/proxy"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
)

var deckhand string

func TestMain(m *testing.M) {
	if os.Getenv(wsAppEnv) != "" {
		runWSApp()
	}
	platformtest.Main(m, &deckhand, "deckhand", "deckhand/agent/cmd/deckhand")
}

// catalog is the containers the proxy sees; the agent behind it is real.
type catalog struct {
	mu    sync.Mutex
	byID  map[string]*proxy.Container
	woken []string
	// onWake runs when a container is woken (the engine start).
	onWake func(c *proxy.Container)
}

func (c *catalog) Find(_ context.Context, prefix, server string) (proxy.Container, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if server != "local" {
		return proxy.Container{}, fault.NotFound("server", server)
	}
	for _, ct := range c.byID {
		if ct.ProjectID+"-"+ct.ID == prefix {
			return *ct, nil
		}
	}
	return proxy.Container{}, fault.NotFound("container", prefix)
}

func (c *catalog) Wake(_ context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.woken = append(c.woken, id)
	if ct := c.byID[id]; ct != nil && c.onWake != nil {
		go func(ct *proxy.Container) {
			time.Sleep(100 * time.Millisecond)
			c.mu.Lock()
			c.onWake(ct)
			c.mu.Unlock()
		}(ct)
	}
	return nil
}

// agent runs the real agent with the container's ids and answers its
// gateway's address.
func agent(t testing.TB, project, container string) string {
	t.Helper()
	base := platformtest.FreePortBase(t, 17)
	gw := "127.0.0.1:" + strconv.Itoa(base)
	cmd := exec.Command(deckhand, "run", "--services", "files,tunnel", "--isolate", "none", "--listen", gw,
		"--port-base", strconv.Itoa(base), "--data", t.TempDir(), "--log-level", "error",
		"--project-id", project, "--container-id", container, "--domain", "deckhand.test", "--trust-proxy-headers")
	var logs platformtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + gw + "/_/files/api/v1/files/stat?path=/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return gw
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not answer: %v %s", err, logs.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func serve(t testing.TB, p *proxy.Proxy) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := p.Server()
	go func() { _ = p.Serve(srv, ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func TestRoutesByHostIntoTheRightContainer(t *testing.T) {
	release := make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/events" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: 0\n\n")
			w.(http.Flusher).Flush()
			// The rest only once the client has the first event: a proxy
			// that buffers never delivers it.
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
			fmt.Fprintf(w, "data: 1\n\ndata: 2\n\n")
			return
		}
		fmt.Fprintf(w, "app %s xff=%s xfh=%s xfp=%s", r.URL.Path, r.Header.Get("X-Forwarded-For"),
			r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Proto"))
	}))
	defer app.Close()
	appPort := strconv.Itoa(app.Listener.Addr().(*net.TCPAddr).Port)

	a := agent(t, "proj", "ctr1")
	b := agent(t, "proj", "ctr2")
	cat := &catalog{byID: map[string]*proxy.Container{
		"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running", Addr: a},
		"ctr2": {ID: "ctr2", ProjectID: "proj", Status: "running", Addr: b},
		"dead": {ID: "dead", ProjectID: "proj", Status: "failed", Reason: "image deckhand/nope:1 not found in the engine"},
		"off":  {ID: "off", ProjectID: "proj", Status: "stopped"},
	}}
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test"}, cat))

	raw := func(req string) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", px)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	get := func(host, path string) (int, string) {
		t.Helper()
		return raw("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
	}

	preview1 := "proj-ctr1-p" + appPort + "-1.local.deckhand.test"
	cases := []struct {
		name, host, path string
		code             int
		has              string
	}{
		{"port preview", preview1, "/style.css", 200, "app /style.css xff=127.0.0.1 xfh=" + preview1 + " xfp=http"},
		{"mixed case", strings.ToUpper(preview1), "/", 200, "app / "},
		{"service by host", "proj-ctr1-files-1.local.deckhand.test", "/api/v1/files/stat?path=/", 200, `"type"`},
		{"unknown container", "proj-nope-files-1.local.deckhand.test", "/", 404, "not found"},
		{"unknown server", "proj-ctr1-files-1.elsewhere.deckhand.test", "/", 404, ""},
		{"trailing dot", preview1 + ".", "/", 404, "no container answers"},
		{"not a container host", "deckhand.test", "/", 404, "no container answers"},
		{"second instance", "proj-ctr1-files-2.local.deckhand.test", "/", 404, "instance 2"},
		{"failed container", "proj-dead-files-1.local.deckhand.test", "/", 502, "image deckhand/nope:1 not found"},
		{"stopped, no autostart", "proj-off-files-1.local.deckhand.test", "/", 503, "autostart is off"},
	}
	for _, tc := range cases {
		code, body := get(tc.host, tc.path)
		if code != tc.code || !strings.Contains(body, tc.has) {
			t.Errorf("%s: GET %s%s = %d %q, want %d with %q", tc.name, tc.host, tc.path, code, body, tc.code, tc.has)
		}
	}

	// Host tricks never reach the wrong container: the proxy routes by
	// the one Host, and the agent behind it refuses a Host naming another.
	code, body := raw("GET http://proj-ctr2-p" + appPort + "-1.local.deckhand.test/x HTTP/1.1\r\nHost: " + preview1 + "\r\nConnection: close\r\n\r\n")
	if code == 200 && !strings.Contains(body, "xfh=proj-ctr2") {
		t.Errorf("absolute URI: %d %q", code, body)
	}
	code, _ = raw("GET / HTTP/1.1\r\nHost: " + preview1 + "\r\nHost: proj-ctr2-files-1.local.deckhand.test\r\nConnection: close\r\n\r\n")
	if code != 400 {
		t.Errorf("two Host headers: %d, want 400", code)
	}
	// A container whose record points at another's agent is refused by
	// that agent: its gateway serves only its own ids.
	cat.mu.Lock()
	cat.byID["ctr1"].Addr = b
	cat.mu.Unlock()
	if code, body := get(preview1, "/"); code != 404 || !strings.Contains(body, "names another container") {
		t.Errorf("misrouted request: %d %q", code, body)
	}
	cat.mu.Lock()
	cat.byID["ctr1"].Addr = a
	cat.mu.Unlock()

	// Server-sent events arrive as they are sent, not at the end.
	req, _ := http.NewRequest(http.MethodGet, "http://"+px+"/events", nil)
	req.Host = preview1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	first := make(chan string, 1)
	go func() { line, _ := r.ReadString('\n'); first <- line }()
	select {
	case line := <-first:
		if line != "data: 0\n" {
			t.Fatalf("first event: %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first event did not pass the proxy before the stream ended: it buffers")
	}
	close(release)
	rest, _ := io.ReadAll(r)
	resp.Body.Close()
	if !strings.Contains(string(rest), "data: 2") {
		t.Fatalf("events: %q", rest)
	}
}

func TestWakesAStoppedContainerWithAutostart(t *testing.T) {
	a := agent(t, "proj", "ctr1")
	cat := &catalog{byID: map[string]*proxy.Container{
		"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "stopped", Autostart: true},
	}}
	cat.onWake = func(c *proxy.Container) { c.Status, c.Addr = "running", a }
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test", WakeTimeout: 10 * time.Second}, cat))

	// A browser navigation gets the page that waits, and the wake starts.
	req, _ := http.NewRequest(http.MethodGet, "http://"+px+"/", nil)
	req.Host = "proj-ctr1-files-1.local.deckhand.test"
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "is starting") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("navigation while starting: %d %q", resp.StatusCode, body)
	}
	// An API client is held until the container runs, then answered.
	cat.mu.Lock()
	cat.byID["ctr1"].Status, cat.byID["ctr1"].Addr = "stopped", ""
	cat.mu.Unlock()
	req, _ = http.NewRequest(http.MethodGet, "http://"+px+"/api/v1/files/stat?path=/", nil)
	req.Host = "proj-ctr1-files-1.local.deckhand.test"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("held request after wake: %d %q", resp.StatusCode, body)
	}
	cat.mu.Lock()
	woken := len(cat.woken)
	cat.mu.Unlock()
	if woken != 2 {
		t.Fatalf("woken %d times, want 2", woken)
	}
}
