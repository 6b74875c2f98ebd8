package e2e_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/agent"
)

// TestOutsideClientByIPWithDefaultAllow: a client from outside loopback
// that addresses the agent by its IP passes the gateway under a document
// whose default is allow, and the service behind it trusts that decision
// instead of judging the Host again: in-process dispatch, a WebSocket
// (spliced to the service's own port) and a chunked upload (proxied to
// it) all answer. A direct connection to a service's port is still
// judged by its own request policy.
func TestOutsideClientByIPWithDefaultAllow(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP()
	if ip == "" {
		t.Skip("this machine has no non-loopback IPv4 address to call from")
	}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(app.Close)
	perm := filepath.Join(t.TempDir(), "perm.json")
	if err := os.WriteFile(perm, []byte(`{"project":"p1","container":"c1","default":"allow","groups":{},"permissions":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := freeBase(t)
	data := t.TempDir()
	a := startRaw(t, nil, "127.0.0.1:"+strconv.Itoa(base), base, data, "run", "--data", data, "--listen", "0.0.0.0:"+strconv.Itoa(base),
		"--port-base", strconv.Itoa(base), "--services", "files,tunnel", "--files-root", t.TempDir(), "--permissions-file", perm, "--log-level", "warn")
	a.ready(t)
	gw := net.JoinHostPort(ip, strconv.Itoa(base))

	if status, m, raw := get(t, "http://"+gw+"/_/files/health"); status != 200 || m["service"] != "files" {
		t.Errorf("outside client by IP, in-process dispatch: %d %s", status, raw)
	}
	// A chunked upload goes through the proxy to the files service's port.
	req, _ := http.NewRequest(http.MethodPut, "http://"+gw+"/_/files/api/v1/files/content?path=/up.txt", strings.NewReader("hello"))
	req.ContentLength = -1
	req.TransferEncoding = []string{"chunked"}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Errorf("outside client by IP, chunked upload: %d", resp.StatusCode)
	}
	// A WebSocket is spliced to the tunnel's own port.
	c, err := net.DialTimeout("tcp", gw, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // hang guard
	fmt.Fprintf(c, "GET /_/tunnel/api/v1/tunnel/ws?port=%d HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", app.Listener.Addr().(*net.TCPAddr).Port, gw)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 101") {
		t.Errorf("outside client by IP, WebSocket: %q %v", line, err)
	}
	// The service's own port still judges what reaches it directly.
	direct := "http://127.0.0.1:" + strconv.Itoa(agent.Port(base, "files")) + "/health"
	if status, m, raw := get(t, direct, "Host", "rebound.example"); status != 421 || m["code"] != "MISDIRECTED_REQUEST" {
		t.Errorf("direct to the service port with a foreign Host: %d %s", status, raw)
	}
}
