package containerse2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// viaProxy is a client that sends every request, whatever its URL's host
// (a container's `…​.local.localhost` name, which the test machine's
// resolver need not know), to the platform proxy at proxyAddr, with the
// URL's host as the Host, and the access token as its bearer.
type viaProxy struct {
	t      *testing.T
	cl     *http.Client
	bearer string
}

func newViaProxy(t *testing.T, proxyAddr, token string) *viaProxy {
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{DisableCompression: true, Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "tcp", proxyAddr) }}
	t.Cleanup(tr.CloseIdleConnections)
	return &viaProxy{t: t, cl: &http.Client{Transport: tr}, bearer: "Bearer " + token}
}

// do sends a request and answers the response; its body is the caller's
// to close.
func (v *viaProxy) do(method, url string, body io.Reader, hdr ...string) *http.Response {
	v.t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		v.t.Fatal(err)
	}
	req.Header.Set("Authorization", v.bearer)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := v.cl.Do(req)
	if err != nil {
		v.t.Fatalf("%s %s through the proxy: %v", method, url, err)
	}
	return resp
}

// json sends a JSON body and answers the status and the body.
func (v *viaProxy) json(method, url string, body any) (int, []byte) {
	v.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	resp := v.do(method, url, rd)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// sh runs a shell command line in the container through the proxy and
// answers its stdout.
func (v *viaProxy) sh(processURL, line string) string {
	v.t.Helper()
	code, out := v.json("POST", processURL+"/api/v1/process/run", map[string]any{"shell": line})
	var r struct {
		Stdout, Stderr string
		ExitCode       *int `json:"exit_code"`
	}
	if code != 200 || json.Unmarshal(out, &r) != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		v.t.Fatalf("run %q through the proxy: %d %s", line, code, out)
	}
	return r.Stdout
}

// proxied starts a control plane serving the platform proxy, creates a
// running container and mints an access token for it; it answers the
// container's service URLs, the proxy's address and a client through it,
// once the agent admits the token.
func proxied(t *testing.T, name string, extra map[string]any, flags ...string) (f *fixture, id string, urls map[string]string, proxyAddr string, v *viaProxy) {
	t.Helper()
	proxyAddr = "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	f = newFixture(t, append([]string{"--proxy-listen", proxyAddr}, flags...)...)
	id = f.create(name, extra)
	c := f.await(id, "running", 90*time.Second)
	urls = map[string]string{}
	for k, u := range c["urls"].(map[string]any) {
		urls[k] = u.(string)
	}
	tok := data(f.must(201, "POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{}, f.alice))["token"].(string)
	v = newViaProxy(t, proxyAddr, tok)
	deadline := time.Now().Add(40 * time.Second)
	for {
		code, out := v.json("POST", urls["process"]+"/api/v1/process/run", map[string]any{"shell": "true"})
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never admitted the access token through the proxy: %d %s", code, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return f, id, urls, proxyAddr, v
}

// TestServicesThroughTheProxy reaches a real container's services by
// their URLs through `deckhand-control serve --proxy-listen` with an
// access token: a 100 MiB download whole and by Range, WebDAV through
// rclone, process output as Server-Sent Events, and the terminal's
// WebSocket in Chromium.
func TestServicesThroughTheProxy(t *testing.T) {
	_, _, urls, proxyAddr, v := proxied(t, "svc", nil)

	t.Run("download", func(t *testing.T) {
		v.t = t
		const size = 100 << 20
		sum := strings.Fields(v.sh(urls["process"], "head -c "+strconv.Itoa(size)+" /dev/urandom > /tmp/big && chmod 644 /tmp/big && sha256sum /tmp/big"))[0]
		content := urls["files"] + "/api/v1/files/content?path=/tmp/big"
		resp := v.do("GET", content, nil)
		whole, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := sha256.Sum256(whole)
		if err != nil || resp.StatusCode != 200 || len(whole) != size || hex.EncodeToString(got[:]) != sum {
			t.Fatalf("download: %d, %d bytes (%v), sha256 %x, the container's %s", resp.StatusCode, len(whole), err, got, sum)
		}
		for _, r := range []struct {
			spec     string
			from, to int
		}{
			{"bytes=1000000-60000000", 1000000, 60000000},
			{"bytes=-1048576", size - 1048576, size - 1},
			{"bytes=7-17", 7, 17},
		} {
			resp := v.do("GET", content, nil, "Range", r.spec)
			part, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "bytes " + strconv.Itoa(r.from) + "-" + strconv.Itoa(r.to) + "/" + strconv.Itoa(size)
			if err != nil || resp.StatusCode != 206 || resp.Header.Get("Content-Range") != want || !bytes.Equal(part, whole[r.from:r.to+1]) {
				t.Fatalf("Range %s: %d, Content-Range %q (want %q), %d bytes (%v)", r.spec, resp.StatusCode,
					resp.Header.Get("Content-Range"), want, len(part), err)
			}
		}
	})

	t.Run("webdav", func(t *testing.T) {
		v.t = t
		if _, err := exec.LookPath("rclone"); err != nil {
			t.Skip("rclone is not installed")
		}
		src := t.TempDir()
		want := map[string]string{
			"a.txt":         "alpha",
			"dir/b.bin":     strings.Repeat("\x00\x01binary", 300000),
			"dir/sub/c.txt": "gamma",
			"with space.md": "a name with a space",
		}
		for name, content := range want {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rclone := func(args ...string) {
			t.Helper()
			cmd := exec.Command("rclone", append([]string{"--config", "/dev/null", "--webdav-url", urls["files"] + "/dav/",
				"--webdav-bearer-token", strings.TrimPrefix(v.bearer, "Bearer "), "--low-level-retries", "1", "--retries", "1"}, args...)...)
			// The container's name resolves nowhere here: rclone reaches
			// it with the platform proxy as its HTTP proxy, which routes
			// an absolute request URI by its host as any other.
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "HTTP_PROXY=http://"+proxyAddr, "http_proxy=http://"+proxyAddr,
				"NO_PROXY=", "no_proxy=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("rclone %v: %v\n%s", args, err, out)
			}
		}
		rclone("copy", src, ":webdav:tmp/davtest")
		if got := v.sh(urls["process"], "cat /tmp/davtest/dir/sub/c.txt; sha256sum /tmp/davtest/dir/b.bin"); !strings.HasPrefix(got, "gamma") ||
			!strings.Contains(got, hexSum(want["dir/b.bin"])) {
			t.Fatalf("the files in the container: %q", got)
		}
		dst := t.TempDir()
		rclone("copy", ":webdav:tmp/davtest", dst)
		for name, content := range want {
			b, err := os.ReadFile(filepath.Join(dst, name))
			if err != nil || string(b) != content {
				t.Errorf("copied out %s: %v (%d bytes)", name, err, len(b))
			}
		}
		rclone("check", src, ":webdav:tmp/davtest")
	})

	t.Run("process output as events", func(t *testing.T) {
		v.t = t
		code, out := v.json("POST", urls["process"]+"/api/v1/process", map[string]any{
			"cmd": []string{"sh", "-c", "echo first; read x; echo second $x"}, "keep_stdin_open": true})
		var p struct{ ID string }
		if code/100 != 2 || json.Unmarshal(out, &p) != nil || p.ID == "" {
			t.Fatalf("start: %d %s", code, out)
		}
		resp := v.do("GET", urls["process"]+"/api/v1/process/"+p.ID+"/output?follow=true", nil, "Accept", "text/event-stream")
		defer resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("output stream: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		lines := make(chan string, 64)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		await := func(what string) string {
			t.Helper()
			timeout := time.After(30 * time.Second)
			var seen []string
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("the stream ended before %q: %q", what, seen)
					}
					seen = append(seen, l)
					if strings.HasPrefix(l, "data: ") && strings.Contains(l, what) {
						return l
					}
				case <-timeout:
					t.Fatalf("no event with %q through the proxy (it buffers?): %q", what, seen)
				}
			}
		}
		// The process waits for its input: the first line must pass the
		// proxy while the stream is open.
		if l := await("first"); strings.Contains(l, "second") {
			t.Fatalf("first event: %q", l)
		}
		if code, out := v.json("POST", urls["process"]+"/api/v1/process/"+p.ID+"/stdin", map[string]any{"data": "hello\n"}); code/100 != 2 {
			t.Fatalf("stdin: %d %s", code, out)
		}
		await("second hello")
		await(`"type":"end"`)
	})

	t.Run("terminal in Chromium", func(t *testing.T) {
		node, chromium, dir := platformtest.BrowserTools(t, "../../scripts/e2e")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "terminal-browser.mjs"), urls["terminal"]+"/")
		cmd.Dir = dir
		// Chromium resolves every *.localhost name to the loopback
		// itself; the page's requests and its WebSocket carry the token
		// as the deckhand_token cookie of the container's host.
		cmd.Env = append(os.Environ(), "CHROMIUM="+chromium, "DECKHAND_TOKEN="+strings.TrimPrefix(v.bearer, "Bearer "))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "browser test passed") {
			t.Fatalf("browser test through the proxy: %v\n%s", err, out)
		}
		for _, want := range []string{"read back hi-from-browser", "resized to"} {
			if !strings.Contains(string(out), want) {
				t.Fatalf("browser test did not report %q:\n%s", want, out)
			}
		}
	})
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestProxyWakeFirstByte measures the first byte of an answer through the
// proxy from a stopped container with autostart, DECKHAND_BENCH_WAKE
// times (p50 and p95 in the log):
//
//	DECKHAND_BENCH_WAKE=10 go test -run TestProxyWakeFirstByte -v ./control/containerse2e/
func TestProxyWakeFirstByte(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("DECKHAND_BENCH_WAKE"))
	if rounds <= 0 {
		t.Skip("a benchmark: set DECKHAND_BENCH_WAKE=N to run it")
	}
	// The debug log has each wake's steps: the engine's start asked, the
	// record running (the agent enrolled and healthy).
	f, id, urls, _, v := proxied(t, "wake", map[string]any{"autostart": true}, "--proxy-wake-timeout", "120s", "--log-level", "debug")
	var took, asked, running, after, second, exchange []time.Duration
	answered := regexp.MustCompile(`platform proxy: answered after the wake.*?ms["=:]+(\d+)`)
	step := regexp.MustCompile(`platform proxy: woke.*?asked_ms["=:]+(\d+).*?running_ms["=:]+(\d+)`)
	for i := 0; i < rounds; i++ {
		f.must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, f.alice)
		f.await(id, "stopped", 60*time.Second)
		start := time.Now()
		resp := v.do("GET", urls["files"]+"/api/v1/files/stat?path=/", nil)
		_, err := resp.Body.Read(make([]byte, 1))
		took = append(took, time.Since(start))
		resp.Body.Close()
		if resp.StatusCode != 200 || (err != nil && err != io.EOF) {
			t.Fatalf("round %d: %d %v", i, resp.StatusCode, err)
		}
		// The same request once more: what a first request to a
		// freshly started agent costs beyond any other.
		again := time.Now()
		resp = v.do("GET", urls["files"]+"/api/v1/files/stat?path=/", nil)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		second = append(second, time.Since(again))
		if m := step.FindAllStringSubmatch(f.s.Stderr(), -1); len(m) == i+1 {
			a, _ := strconv.Atoi(m[i][1])
			r, _ := strconv.Atoi(m[i][2])
			asked = append(asked, time.Duration(a)*time.Millisecond)
			running = append(running, time.Duration(r)*time.Millisecond)
			after = append(after, took[i]-running[len(running)-1])
		}
		if m := answered.FindAllStringSubmatch(f.s.Stderr(), -1); len(m) == i+1 {
			a, _ := strconv.Atoi(m[i][1])
			exchange = append(exchange, time.Duration(a)*time.Millisecond)
		}
	}
	median := func(d []time.Duration) time.Duration {
		if len(d) == 0 {
			return 0
		}
		d = append([]time.Duration(nil), d...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	t.Logf("steps (median of %d): the engine's start asked %s, the record running %s, from running to the first byte %s, of which the proxy's exchange with the agent %s (the next request %s)",
		len(running), median(asked), median(running), median(after).Round(time.Millisecond), median(exchange), median(second).Round(time.Microsecond))
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("wake to first byte over %d rounds: p50 %s, p95 %s, min %s, max %s; load %s", rounds,
		took[len(took)/2].Round(time.Millisecond), took[len(took)*95/100].Round(time.Millisecond),
		took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), loadAverage())
}
