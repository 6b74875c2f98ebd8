package terminal_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// trackingListener remembers its connections so the test can cut them all.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *trackingListener) dropAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
	l.conns = nil
}

// TestBrowser drives the web page in headless Chromium (playwright-core from
// scripts/e2e/node_modules) behind a prefix-stripping reverse proxy like the
// agent gateway's /_/terminal/: it types a command and reads the answer from
// the rendered terminal, resizes the window, cuts every connection and
// checks the page reconnects by itself.
func TestBrowser(t *testing.T) {
	t.Parallel()
	node, chromium, dir := platformtest.BrowserTools(t, "../../scripts/e2e")

	e := newEnv(t, nil, nil)
	target, _ := url.Parse(e.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	mux := http.NewServeMux()
	mux.Handle("/_/terminal/", http.StripPrefix("/_/terminal", proxy))
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &trackingListener{Listener: raw}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "terminal-browser.mjs"),
		"http://"+ln.Addr().String()+"/_/terminal/", "--steps")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if line == "DROP?" {
			ln.dropAll()
			_, _ = io.WriteString(stdin, "go\n")
		}
	}
	err = cmd.Wait()
	if err != nil || !strings.Contains(log.String(), "browser test passed") {
		t.Fatalf("browser test: %v\nstdout:\n%s\nstderr:\n%s", err, log.String(), stderr.String())
	}
	for _, want := range []string{"read back hi-from-browser", "resized to", "read back back-after-drop"} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("browser test did not report %q:\n%s", want, log.String())
		}
	}
}

// TestBrowserReload: the web page keeps its session across a reload (the
// replay brings the screen back), "New terminal" starts another shell, the
// sessions list counts the attached page and drops it when the page
// closes, and the favicon loads (scripts/e2e/terminal-browser.mjs --reload).
func TestBrowserReload(t *testing.T) {
	t.Parallel()
	node, chromium, dir := platformtest.BrowserTools(t, "../../scripts/e2e")
	e := newEnv(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "terminal-browser.mjs"), e.url+"/", "--reload")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "browser test passed") {
		t.Fatalf("browser test: %v\n%s", err, out)
	}
	for _, want := range []string{"attached 1 before the reload", "reload kept session", "bare URL reattached", "new terminal", "attached 0 after the page closed"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("browser test did not report %q:\n%s", want, out)
		}
	}
}
