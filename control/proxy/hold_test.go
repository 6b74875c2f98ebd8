package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/control/proxy"
)

// wsAppEnv makes the test binary a WebSocket echo server (see TestMain):
// the app lives in its own process so the thousand connections it holds
// do not count against the race detector's goroutine limit here.
const wsAppEnv = "DECKHAND_PROXYTEST_WS_APP"

// runWSApp serves /ws (echo) and / on a free port, prints the port and
// runs until its stdin closes.
func runWSApp() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/ws" {
				fmt.Fprint(w, "app")
				return
			}
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				kind, b, err := c.ReadMessage()
				if err != nil {
					return
				}
				if c.WriteMessage(kind, b) != nil {
					return
				}
			}
		}))
	}()
	fmt.Printf("port %d\n", ln.Addr().(*net.TCPAddr).Port)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// wsApp starts the echo app and answers its port.
func wsApp(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), wsAppEnv+"=1")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "port ") {
		t.Fatalf("the app did not start: %q %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "port "))
}

// TestHoldsIdleWebSocketsAndSlowClientsWithoutStallingOthers holds a
// thousand idle WebSockets and two hundred clients that stop reading a
// large download, all through the proxy into one real agent, and a
// request to a container whose agent never answers; a fast client's
// requests and a message on a held WebSocket still get through.
func TestHoldsIdleWebSocketsAndSlowClientsWithoutStallingOthers(t *testing.T) {
	const idleWS, slow = 1000, 200
	appPort := wsApp(t)
	gw := agent(t, "proj", "ctr1")
	// A container whose "agent" accepts connections and never answers.
	stuck, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	go func() {
		for {
			c, err := stuck.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	cat := &catalog{byID: map[string]*proxy.Container{
		"ctr1":  {ID: "ctr1", ProjectID: "proj", Status: "running", Addr: gw},
		"stuck": {ID: "stuck", ProjectID: "proj", Status: "running", Addr: stuck.Addr().String()},
	}}
	px := serve(t, proxy.New(proxy.Config{Domain: "deckhand.test", MaxConnsPerContainer: idleWS + slow + 64}, cat))
	preview := "proj-ctr1-p" + appPort + "-1.local.deckhand.test"
	files := "proj-ctr1-files-1.local.deckhand.test"

	// The stuck container holds its requests; nobody else waits for it.
	for i := 0; i < 4; i++ {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, "http://"+px+"/", nil)
			req.Host = "proj-stuck-files-1.local.deckhand.test"
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}

	dialer := websocket.Dialer{NetDial: func(string, string) (net.Conn, error) { return net.Dial("tcp", px) },
		HandshakeTimeout: 30 * time.Second}
	conns := make([]*websocket.Conn, 0, idleWS)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < idleWS; i++ {
		c, resp, err := dialer.Dial("ws://"+preview+"/ws", nil)
		if err != nil {
			t.Fatalf("WebSocket %d: %v (%v)", i, err, resp)
		}
		conns = append(conns, c)
	}

	big := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Slow clients: each reads the answer's head and then nothing more,
	// so the proxy's writes to it block once the socket buffers are full.
	var slowConns []net.Conn
	defer func() {
		for _, c := range slowConns {
			c.Close()
		}
	}()
	for i := 0; i < slow; i++ {
		c, err := net.Dial("tcp", px)
		if err != nil {
			t.Fatal(err)
		}
		slowConns = append(slowConns, c)
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "GET /api/v1/files/content?path=%s HTTP/1.1\r\nHost: %s\r\n\r\n", big, files)
		line, err := bufio.NewReaderSize(c, 512).ReadString('\n')
		if err != nil || !strings.Contains(line, " 200 ") {
			t.Fatalf("slow client %d: %q %v", i, line, err)
		}
		_ = c.SetDeadline(time.Time{})
	}

	// A fast client still gets its answers, and a held WebSocket still
	// carries a message both ways.
	cl := &http.Client{Timeout: 20 * time.Second}
	for i := 0; i < 20; i++ {
		req, _ := http.NewRequest(http.MethodGet, "http://"+px+"/api/v1/files/stat?path=/", nil)
		req.Host = files
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("fast request %d with %d idle WebSockets and %d slow clients held: %v", i, idleWS, slow, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("fast request %d: %d", i, resp.StatusCode)
		}
	}
	for _, c := range []*websocket.Conn{conns[0], conns[idleWS/2], conns[idleWS-1]} {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_ = c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		if err := c.WriteMessage(websocket.TextMessage, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, b, err := c.ReadMessage(); err != nil || string(b) != "ping" {
			t.Fatalf("held WebSocket: %q %v", b, err)
		}
	}
	// A new WebSocket opens beside the held ones.
	c, _, err := dialer.Dial("ws://"+preview+"/ws", nil)
	if err != nil {
		t.Fatalf("a new WebSocket beside %d held: %v", idleWS, err)
	}
	c.Close()
}
