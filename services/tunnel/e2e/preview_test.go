package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// TestPortPreviewHost reaches a port of the container by a preview Host
// (`<project>-<container>-p<port>-1.<server>.<domain>`) through the real
// agent's gateway: the app is at the root of that host, so a page's
// root-relative links resolve, and the preview is judged as the port.
func TestPortPreviewHost(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "app %s prefix=%q host=%s", r.URL.Path, r.Header.Get("X-Forwarded-Prefix"), r.Header.Get("X-Forwarded-Host"))
	}))
	defer app.Close()
	appPort := app.Listener.Addr().(*net.TCPAddr).Port
	base := platformtest.FreePortBase(t, 15)
	gw := "127.0.0.1:" + strconv.Itoa(base)
	cmd := exec.Command(deckhand, "run", "--services", "tunnel", "--isolate", "none", "--listen", gw,
		"--port-base", strconv.Itoa(base), "--data", t.TempDir(), "--log-level", "error",
		"--project-id", "proj", "--container-id", "ctr1", "--domain", "deckhand.test")
	var logs platformtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	get := func(host, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+gw+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	preview := "proj-ctr1-p" + strconv.Itoa(appPort) + "-1.local.deckhand.test"
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get("http://" + gw + "/_/tunnel/api/v1/tunnel/bindings"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not serve the tunnel: %s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cases := []struct {
		host, path string
		code       int
		body       string
	}{
		{preview, "/style.css", 200, fmt.Sprintf("app /style.css prefix=\"\" host=%s", preview)},
		{preview, "/", 200, fmt.Sprintf("app / prefix=\"\" host=%s", preview)},
		{preview + ":80", "/a/b?x=1", 200, fmt.Sprintf("app /a/b prefix=\"\" host=%s:80", preview)},
		// The agent's own ports stay denied, by preview as by path.
		{"proj-ctr1-p" + strconv.Itoa(base+2) + "-1.local.deckhand.test", "/", 403, ""},
		// Another container's preview is not this agent's to serve.
		{"proj-ctr2-p" + strconv.Itoa(appPort) + "-1.local.deckhand.test", "/", 404, ""},
		// One port, one name: no leading zeros, no second instance.
		{"proj-ctr1-p0" + strconv.Itoa(appPort) + "-1.local.deckhand.test", "/", 404, ""},
		{"proj-ctr1-p" + strconv.Itoa(appPort) + "-2.local.deckhand.test", "/", 404, ""},
	}
	for _, tc := range cases {
		code, body := get(tc.host, tc.path)
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("GET %s%s = %d %q, want %d %q", tc.host, tc.path, code, body, tc.code, tc.body)
		}
	}
}
