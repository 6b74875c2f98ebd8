package e2e_test

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"deckhand/agent"
)

// TestPagesCannotBeFramed: the web terminal and the takeover page, through
// the gateway and on the service's own port, say no page may frame them
// (X-Frame-Options DENY, Content-Security-Policy frame-ancestors 'none'),
// and a cross-site request to put them in a frame (Sec-Fetch-Dest iframe,
// frame, embed, object) is refused outright, while a cross-site link
// (a top-level navigation) still opens them.
func TestPagesCannotBeFramed(t *testing.T) {
	t.Parallel()
	a := startEnv(t, quietHome(t), "--services", "terminal,display")
	a.waitFor(t, "the terminal running", func(st *agent.Status) bool {
		for _, s := range st.Services {
			if s.Name == "terminal" && s.State == "running" {
				return true
			}
		}
		return false
	})
	pages := []string{
		"http://" + a.gw + "/_/terminal/",
		"http://127.0.0.1:" + strconv.Itoa(agent.Port(a.base, "terminal")) + "/",
		"http://" + a.gw + "/_/display/api/v1/display/vnc/",
	}
	fetch := func(url string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, url := range pages {
		resp := fetch(url)
		if resp.Header.Get("X-Frame-Options") != "DENY" || !slices.Contains(resp.Header.Values("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s (%d): X-Frame-Options %q, Content-Security-Policy %q", url, resp.StatusCode,
				resp.Header.Get("X-Frame-Options"), resp.Header.Values("Content-Security-Policy"))
		}
		for _, dest := range []string{"iframe", "frame", "embed", "object"} {
			if resp := fetch(url, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", dest); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s framed cross-site (%s): %d, want 403", url, dest, resp.StatusCode)
			}
		}
		if resp := fetch(url, "Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "iframe"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s framed same-site: %d, want 403", url, resp.StatusCode)
		}
	}
	if resp := fetch(pages[0], "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"); resp.StatusCode != http.StatusOK {
		t.Errorf("a cross-site link to the terminal: %d, want 200", resp.StatusCode)
	}
}

// TestBrowserRefusesFraming in a real browser: a page of another site
// frames the web terminal served through the gateway. The frame never
// shows the terminal (Chromium's error page instead) and no shell starts.
func TestBrowserRefusesFraming(t *testing.T) {
	node, chromium, dir := browserTools(t)
	a := startEnv(t, quietHome(t), "--services", "terminal")
	a.ready(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><title>another site</title><iframe width="800" height="600" src="`+
			html.EscapeString(r.URL.Query().Get("src"))+`"></iframe>`)
	}))
	defer evil.Close()
	// localhost and 127.0.0.1 are different sites: the frame is cross-site.
	page := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1) + "/"
	out := runNode(t, node, chromium, dir, filepath.Join(dir, "frame-browser.mjs"), page, "http://"+a.gw+"/_/terminal/")
	if !strings.Contains(out, "frame test ran") || !strings.Contains(out, "frames 1") {
		t.Fatalf("the frame test did not run:\n%s", out)
	}
	if !strings.Contains(out, "framed status 403") {
		t.Errorf("the gateway did not refuse the framed request:\n%s", out)
	}
	if strings.Contains(strings.ToLower(out), "frame shows terminal") || !strings.Contains(out, "frame url chrome-error://") {
		t.Errorf("the terminal page showed inside another site's frame:\n%s", out)
	}
	if n := terminalSessions(t, a.gw); n != 0 {
		t.Fatalf("the framed terminal started %d session(s):\n%s", n, out)
	}
}
