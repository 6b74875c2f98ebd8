package containerse2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// through sends a request to a container's per-service URL by way of the
// platform proxy at proxyAddr (the URL's host resolves nowhere: the Host
// header carries it).
func through(t *testing.T, proxyAddr, method, rawURL string, body any, hdr ...string) (int, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, "http://"+proxyAddr+u.RequestURI(), rd)
	req.Host = u.Host
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s through the proxy: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestPlatformProxy reaches a real container's services and a port
// preview by their URLs through `deckhand-control serve --proxy-listen`,
// wakes the container after a stop, and answers 404 once it is deleted.
func TestPlatformProxy(t *testing.T) {
	proxyAddr := "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	f := newFixture(t, "--proxy-listen", proxyAddr, "--proxy-wake-timeout", "60s")
	id := f.create("web", map[string]any{"autostart": true})
	c := f.await(id, "running", 60*time.Second)
	urls := c["urls"].(map[string]any)
	_, port, _ := strings.Cut(proxyAddr, ":")
	want := "http://" + f.project + "-" + id + "-process-1.local.localhost:" + port
	if urls["process"] != want {
		t.Fatalf("urls.process %v, want %s", urls["process"], want)
	}
	// The probe token may run commands and open port 8080.
	doc := "/api/v1/containers/" + id + "/proxy/permissions"
	f.s.Must(f.s.Call("PUT", doc, map[string]any{"project": f.project, "container": id,
		"groups":      map[string]any{"probe": map[string]any{"type": "token", "header": probeHeader, "value": probeKey}},
		"permissions": map[string]any{"probe": map[string]any{"exec": true, "http": []int{8080}}}}, f.alice, "If-Match", "file:v0"), 200)
	f.openAgent(id, c)

	run := urls["process"].(string) + "/api/v1/process/run"
	code, out := through(t, proxyAddr, "POST", run, map[string]any{"shell": "echo through-the-proxy"}, probeHeader, probeKey)
	if code != 200 || !strings.Contains(out, "through-the-proxy") {
		t.Fatalf("process run through the proxy: %d %s", code, out)
	}
	// The agent judges what the proxy passes: no credential, no run.
	if code, out := through(t, proxyAddr, "POST", run, map[string]any{"shell": "true"}); code != 401 && code != 403 {
		t.Fatalf("process run without a credential through the proxy: %d %s", code, out)
	}
	// An access token alice asked for opens it too, beside the document.
	tok := data(f.must(201, "POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{"services": []string{"process"}}, f.alice))
	if tok["urls"].(map[string]any)["process"] != want {
		t.Fatalf("access token urls: %v", tok)
	}
	if code, out := through(t, proxyAddr, "POST", run, map[string]any{"shell": "echo by-token"}, "Authorization", "Bearer "+tok["token"].(string)); code != 200 || !strings.Contains(out, "by-token") {
		t.Fatalf("process run with an access token through the proxy: %d %s", code, out)
	}

	// A web server in the container, reached as a port preview at the
	// root of its own host.
	code, out = through(t, proxyAddr, "POST", run, map[string]any{"shell": "mkdir -p /tmp/site/css && echo '<link href=\"/css/a.css\">' > /tmp/site/index.html && " +
		"echo 'body{}' > /tmp/site/css/a.css"}, probeHeader, probeKey)
	if code != 200 {
		t.Fatalf("write the site: %d %s", code, out)
	}
	// In the background and in the foreground of its own process, so it
	// lives past the request that started it.
	code, out = through(t, proxyAddr, "POST", strings.TrimSuffix(run, "/run"), map[string]any{"cmd": []string{"busybox", "httpd", "-f", "-p", "8080", "-h", "/tmp/site"}},
		probeHeader, probeKey)
	if code != 201 && code != 200 {
		t.Fatalf("start httpd: %d %s", code, out)
	}
	preview := "http://" + f.project + "-" + id + "-p8080-1.local.localhost:" + port
	var css string
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, css = through(t, proxyAddr, "GET", preview+"/css/a.css", nil, probeHeader, probeKey); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			_, procs := through(t, proxyAddr, "GET", strings.TrimSuffix(run, "/run"), nil, probeHeader, probeKey)
			_, ps := through(t, proxyAddr, "POST", run, map[string]any{"shell": "ps; netstat -ltn"}, probeHeader, probeKey)
			t.Fatalf("port preview: %d %s\nprocesses: %s\n%s", code, css, procs, ps)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if css != "body{}\n" {
		t.Fatalf("port preview root-relative link: %q", css)
	}
	if code, _ := through(t, proxyAddr, "GET", preview+"/", nil); code != 401 && code != 403 {
		t.Fatalf("private port preview without a credential: %d", code)
	}
	// Another port the document does not open stays shut.
	other := "http://" + f.project + "-" + id + "-p8081-1.local.localhost:" + port
	if code, _ := through(t, proxyAddr, "GET", other+"/", nil, probeHeader, probeKey); code != 403 {
		t.Fatalf("a port the document does not open: %d", code)
	}

	// A signed preview link opens port 8080, and only it, with no
	// credential of the document: once in the query, then by cookie.
	f.must(400, "POST", "/api/v1/containers/"+id+"/previews", map[string]any{"port": 0}, f.alice)
	f.must(400, "POST", "/api/v1/containers/"+id+"/previews", map[string]any{"port": 8080, "ttl_seconds": 10}, f.alice)
	link := data(f.must(201, "POST", "/api/v1/containers/"+id+"/previews", map[string]any{"port": 8080}, f.alice))
	lu, err := url.Parse(link["url"].(string))
	if err != nil || lu.Host != strings.TrimPrefix(preview, "http://") {
		t.Fatalf("preview link %v", link)
	}
	noFollow := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", "http://"+proxyAddr+lu.RequestURI(), nil)
	req.Host = lu.Host
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "deckhand_preview" {
			cookie = c
		}
	}
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/" || cookie == nil || !cookie.HttpOnly {
		t.Fatalf("preview link: %d Location %q cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	req, _ = http.NewRequest("GET", "http://"+proxyAddr+"/css/a.css", nil)
	req.Host = lu.Host
	req.AddCookie(cookie)
	resp, err = noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "body{}\n" {
		_, ps := through(t, proxyAddr, "POST", run, map[string]any{"shell": "ps; netstat -ltn"}, probeHeader, probeKey)
		t.Fatalf("preview by cookie: %d %q\n%s", resp.StatusCode, body, ps)
	}
	if code, _ := through(t, proxyAddr, "GET", other+"/", nil, "Cookie", "deckhand_preview="+cookie.Value); code != 401 && code != 403 {
		t.Fatalf("a preview token for 8080 opened 8081: %d", code)
	}
	if code, _ := through(t, proxyAddr, "GET", preview+"/?deckhand_preview="+url.QueryEscape(cookie.Value+"x"), nil); code != 401 && code != 403 {
		t.Fatalf("a forged preview token: %d", code)
	}

	// A stopped container with autostart wakes for a request.
	f.must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, f.alice)
	code, out = through(t, proxyAddr, "POST", run, map[string]any{"shell": "echo awake"}, probeHeader, probeKey)
	if code != 200 || !strings.Contains(out, "awake") {
		t.Fatalf("request to a stopped container with autostart: %d %s", code, out)
	}
	f.await(id, "running", 10*time.Second)

	// Gone: 404, as for a container that never was.
	f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
	if code, out := through(t, proxyAddr, "GET", urls["process"].(string)+"/", nil, probeHeader, probeKey); code != 404 {
		t.Fatalf("a deleted container through the proxy: %d %s", code, out)
	}
	if code, _ := through(t, proxyAddr, "GET", "http://"+f.project+"-nosuch-process-1.local.localhost:"+port+"/", nil); code != 404 {
		t.Fatalf("an unknown container through the proxy: %d", code)
	}
}
