package terminal_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/spf13/pflag"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/config"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/terminal"
)

// waitLimit only bounds how long a broken build may hang; nothing is timed.
const waitLimit = 30 * time.Second

type env struct {
	svc  *terminal.Service
	host *platform.Host
	url  string
	http *http.Client
}

func newEnv(t testing.TB, opts map[string]string, clock clockpkg.Clock) *env {
	t.Helper()
	if clock == nil {
		clock = clockpkg.SystemClock{}
	}
	var w io.Writer = io.Discard
	if os.Getenv("TERMINAL_TEST_LOG") != "" {
		w = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(w, nil))
	// The host is built the agent's way (contract.NewServiceHost), with a
	// policy that also allows https://app.example.com.
	deps := contract.ServiceDeps{Name: "terminal", DataDir: t.TempDir(), Logger: log, Clock: clock,
		Common: contract.CommonSettings{Domain: "localhost", AllowedOrigins: "https://app.example.com"}}
	svc := terminal.New(deps, settings(t, opts))
	host, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		t.Fatal(err)
	}
	u := platformtest.Serve(t, host)
	t.Cleanup(func() { _ = svc.Close() })
	return &env{svc: svc, host: host, url: u, http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
}

// settings are the service's flags as the agent would parse them: opts
// (keyed like the flags without "terminal-", with _ for -) beat the
// DECKHAND_TERMINAL_* variables, which beat the defaults.
func settings(t testing.TB, opts map[string]string) *terminal.Settings {
	t.Helper()
	set := &terminal.Settings{}
	fs := pflag.NewFlagSet("terminal", pflag.ContinueOnError)
	set.Flags(fs)
	for k, v := range opts {
		if err := fs.Set("terminal-"+strings.ReplaceAll(k, "_", "-"), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := config.ApplyEnvFlags(fs); err != nil {
		t.Fatal(err)
	}
	if err := set.Validate(); err != nil {
		t.Fatal(err)
	}
	return set
}

func (e *env) do(t testing.TB, method, path string, body any) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

func (e *env) create(t testing.TB, body map[string]any) terminal.CreateResponse {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if _, ok := body["shell"]; !ok {
		body["shell"] = "/bin/bash"
	}
	code, b, _ := e.do(t, http.MethodPost, "/api/v1/terminal/create", body)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	var r terminal.CreateResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *env) sessions(t testing.TB) []terminal.SessionInfo {
	t.Helper()
	code, b, _ := e.do(t, http.MethodGet, "/api/v1/terminal/sessions", nil)
	if code != http.StatusOK {
		t.Fatalf("sessions: %d %s", code, b)
	}
	var out []terminal.SessionInfo
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) session(t testing.TB, id string) (terminal.SessionInfo, bool) {
	t.Helper()
	for _, s := range e.sessions(t) {
		if s.ID == id {
			return s, true
		}
	}
	return terminal.SessionInfo{}, false
}

// eventually polls cond until it holds (or fails the test after waitLimit).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wsClient records everything a WebSocket receives.
type wsClient struct {
	conn *websocket.Conn

	mu       sync.Mutex
	out      bytes.Buffer
	events   []string // text frames, in order, with "output:N" markers of bytes received before each
	closeErr error
	started  bool
	done     chan struct{}
}

func (e *env) wsURL(query string) string {
	u, _ := url.Parse(e.url)
	return "ws://" + u.Host + "/api/v1/terminal/ws" + query
}

func (e *env) dial(t testing.TB, query string, hdr http.Header) *wsClient {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(e.wsURL(query), hdr)
	if err != nil {
		body := ""
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			body = strconv.Itoa(resp.StatusCode) + " " + string(b)
		}
		t.Fatalf("dial %s: %v %s", query, err, body)
	}
	return startClient(t, conn, true)
}

func startClient(t testing.TB, conn *websocket.Conn, read bool) *wsClient {
	c := &wsClient{conn: conn, done: make(chan struct{})}
	t.Cleanup(func() {
		conn.Close()
		c.mu.Lock()
		started := c.started
		c.mu.Unlock()
		if started {
			<-c.done
		}
	})
	if read {
		c.start()
	}
	return c
}

func (c *wsClient) start() {
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	go c.loop()
}

func (c *wsClient) loop() {
	defer close(c.done)
	for {
		mt, data, err := c.conn.ReadMessage()
		c.mu.Lock()
		if err != nil {
			c.closeErr = err
			c.mu.Unlock()
			return
		}
		if mt == websocket.BinaryMessage {
			c.out.Write(data)
		} else {
			c.events = append(c.events, "after:"+strconv.Itoa(c.out.Len())+" "+string(data))
		}
		c.mu.Unlock()
	}
}

func (c *wsClient) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

func (c *wsClient) texts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.events...)
}

func (c *wsClient) waitOutput(t testing.TB, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	scanned := 0
	for {
		c.mu.Lock()
		b := c.out.Bytes()
		from := max(0, scanned-len(want))
		found := bytes.Contains(b[from:], []byte(want))
		scanned = len(b)
		c.mu.Unlock()
		if found {
			return
		}
		if time.Now().After(deadline) {
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			out := c.output()
			t.Fatalf("no %q in output; last bytes: %q", want, out[max(0, len(out)-500):])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *wsClient) waitText(t testing.TB, want string) string {
	t.Helper()
	var hit string
	eventually(t, "text frame containing "+want, func() bool {
		for _, ev := range c.texts() {
			if strings.Contains(ev, want) {
				hit = ev
				return true
			}
		}
		return false
	})
	return hit
}

func (c *wsClient) waitClosed(t testing.TB) error {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(waitLimit):
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		t.Fatal("socket did not close")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

func (c *wsClient) send(t testing.TB, s string) {
	t.Helper()
	if err := c.conn.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func (c *wsClient) control(t testing.TB, s string) {
	t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

// children lists the pids whose parent is this test process.
func children(t testing.TB) []int {
	t.Helper()
	me := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(me) {
			out = append(out, pid)
		}
	}
	return out
}

func countFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// hasChild reports whether pid has a child process named comm.
func hasChild(pid int, comm string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return false
	}
	for _, c := range strings.Fields(string(b)) {
		name, _ := os.ReadFile("/proc/" + c + "/comm")
		if strings.TrimSpace(string(name)) == comm {
			return true
		}
	}
	return false
}

func alive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

var _ = net.Dial
