package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/agent"
	"deckhand/platform/platformtest"
)

func browserTools(t *testing.T) (node, chromium, dir string) {
	return platformtest.BrowserTools(t, "../../scripts/e2e")
}

// quietHome gives the agent's shells an empty home, so the machine's own
// ~/.bashrc (a pyenv rehash waiting on a lock, say) cannot hold the prompt.
func quietHome(t *testing.T) []string {
	return []string{"HOME=" + t.TempDir()}
}

func runNode(t *testing.T, node, chromium, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return string(out)
}

func terminalSessions(t *testing.T, gw string) int {
	t.Helper()
	resp, err := client.Get("http://" + gw + "/_/terminal/api/v1/terminal/sessions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(raw, &list) != nil {
		t.Fatalf("sessions: %d %s", resp.StatusCode, raw)
	}
	return len(list)
}

// TestBrowserThroughGateway opens the web terminal in headless Chromium
// through the real agent's gateway (/_/terminal/), under the request
// policy: the page's own requests and its WebSocket are same-origin with
// the gateway and must work; it types a command and reads the answer.
func TestBrowserThroughGateway(t *testing.T) {
	node, chromium, dir := browserTools(t)
	a := startEnv(t, quietHome(t), "--services", "terminal")
	a.ready(t)
	out := runNode(t, node, chromium, dir, filepath.Join(dir, "terminal-browser.mjs"), "http://"+a.gw+"/_/terminal/")
	for _, want := range []string{"read back hi-from-browser", "resized to", "browser test passed"} {
		if !strings.Contains(out, want) {
			t.Fatalf("browser test did not report %q:\n%s", want, out)
		}
	}
}

// TestBrowserCrossSite in a real browser: a page on another
// origin sends the no-preflight POSTs and opens a WebSocket to the agent's
// gateway. No session may start, and the WebSocket must be refused.
func TestBrowserCrossSite(t *testing.T) {
	node, chromium, dir := browserTools(t)
	a := startEnv(t, quietHome(t), "--services", "terminal")
	a.ready(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!doctype html><title>another site</title>")
	}))
	defer evil.Close()
	out := runNode(t, node, chromium, dir, filepath.Join(dir, "cross-site-browser.mjs"), evil.URL+"/", "http://"+a.gw)
	for _, want := range []string{"post text/plain", "post application/x-www-form-urlencoded", "ws refused", "cross-site test ran"} {
		if !strings.Contains(out, want) {
			t.Fatalf("cross-site test did not report %q:\n%s", want, out)
		}
	}
	if n := terminalSessions(t, a.gw); n != 0 {
		t.Fatalf("a page on another origin started %d session(s):\n%s", n, out)
	}
}

// TestBrowserCORS: a page on an origin listed in --allowed-origins calls a
// service with fetch() as a web app does (a JSON POST with an
// Authorization header and credentials: a preflight first), through the
// gateway and on the service's own port, and reads the answers: the body,
// an exposed header and an error body. The same page on an origin not
// listed cannot: its fetch rejects, as the browser refuses the preflight.
func TestBrowserCORS(t *testing.T) {
	node, chromium, dir := browserTools(t)
	page := func(title string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<!doctype html><title>"+title+"</title>")
		}))
		t.Cleanup(s.Close)
		return s
	}
	app, other := page("a web app"), page("another site")
	a := startEnv(t, quietHome(t), "--services", "cron", "--allowed-origins", app.URL)
	a.ready(t)
	const route = "/api/v1/cron/validate"
	targets := []string{"http://" + a.gw + "/_/cron" + route,
		"http://127.0.0.1:" + strconv.Itoa(agent.Port(a.base, "cron")) + route}
	out := runNode(t, node, chromium, dir, append([]string{filepath.Join(dir, "cors-browser.mjs"), app.URL + "/", other.URL + "/"}, targets...)...)
	if !strings.Contains(out, "cors test ran") {
		t.Fatalf("cors test did not run:\n%s", out)
	}
	for _, u := range targets {
		for _, want := range []string{
			"allowed " + u + " read 200 {",
			"allowed " + u + " error 400 INVALID_SCHEDULE",
			"denied " + u + " rejected ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q:\n%s", want, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "allowed "+u+" read") && (!strings.Contains(line, `"next_runs":["`) || !strings.HasSuffix(line, "request-id=yes")) {
				t.Errorf("the allowed page did not read the answer and its exposed header: %s", line)
			}
			if strings.HasPrefix(line, "denied "+u) && !strings.Contains(line, " rejected ") {
				t.Errorf("a page on an origin not listed read an answer: %s", line)
			}
		}
	}
}
