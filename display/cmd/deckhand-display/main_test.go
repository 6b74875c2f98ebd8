package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"deckhand/display/x11"
	"deckhand/platform"
	"deckhand/platform/fault"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Without a reachable display the binary still serves: 503
// DISPLAY_UNAVAILABLE and an unavailable health; once an X server comes up
// on that display it connects without a restart and reports its monitors.
// The display comes from DECKHAND_DISPLAY, as the environment would give it.
func TestServesUnavailableThenConnects(t *testing.T) {
	disp := ":" + fmt.Sprint(4000+os.Getpid()%500)
	addr := freePort(t)
	t.Setenv("DECKHAND_DISPLAY", disp)
	var stderr bytes.Buffer
	cmd := newRoot(io.Discard, &stderr)
	cmd.SetArgs([]string{"--listen", addr, "--retry", "100ms", "--log-level", "error"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("deckhand-display did not stop")
		}
	}()
	base := "http://" + addr
	waitFor(t, "listening", 5*time.Second, func() bool { s, _ := get(t, base+"/health"); return s == 200 })

	status, body := get(t, base+"/api/v1/display/info")
	var e fault.ContainerError
	_ = json.Unmarshal(body, &e)
	if status != 503 || e.Code != "DISPLAY_UNAVAILABLE" {
		t.Fatalf("info without X: %d %s", status, body)
	}
	_, body = get(t, base+"/health")
	var h platform.Health
	_ = json.Unmarshal(body, &h)
	if h.Status != "unavailable" || h.Service != "display" {
		t.Fatalf("health without X: %s", body)
	}

	if _, err := exec.LookPath("Xvfb"); err != nil {
		t.Skip("Xvfb is not installed: the reconnect half of this test needs it")
	}
	if !x11.Available {
		t.Skip("built without cgo: no X11 driver to connect with")
	}
	wd, _ := os.Getwd()
	script := filepath.Join(wd, "..", "..", "..", "scripts", "xvfb.sh")
	state := t.TempDir()
	x := exec.Command("bash", script, "start", disp)
	x.Env = append(os.Environ(), "XVFB_STATE="+state, "XVFB_XTERM=0", "XVFB_SCREEN=800x600x24",
		"XVFB_MONITORS=500x600+0+0 300x600+500+0")
	if out, err := x.CombinedOutput(); err != nil {
		t.Fatalf("xvfb.sh: %v %s", err, out)
	}
	defer func() {
		stop := exec.Command("bash", script, "stop", disp)
		stop.Env = append(os.Environ(), "XVFB_STATE="+state)
		_ = stop.Run()
	}()
	waitFor(t, "connected to the new X server", 10*time.Second, func() bool {
		s, _ := get(t, base+"/api/v1/display/info")
		return s == 200
	})
	_, body = get(t, base+"/api/v1/display/info")
	// two RandR monitors side by side: the multi-screen answer
	if string(body) != `{"width":800,"height":600,"displays":[{"index":0,"x":0,"y":0,"width":500,"height":600},`+
		`{"index":1,"x":500,"y":0,"width":300,"height":600}]}` {
		t.Fatalf("info = %s", body)
	}
	_, body = get(t, base+"/health")
	_ = json.Unmarshal(body, &h)
	if h.Status != "ok" {
		t.Fatalf("health with X: %s", body)
	}
}

// TestRequestPolicy for display input: a cross-site page's
// text/plain POST to keyboard/type, or a rebinding Host, never reaches the
// display; --domain and --allowed-origins configure what may.
func TestRequestPolicy(t *testing.T) {
	addr := freePort(t)
	var stderr bytes.Buffer
	cmd := newRoot(io.Discard, &stderr)
	cmd.SetArgs([]string{"--listen", addr, "--display", "", "--domain", "example.test",
		"--allowed-origins", "https://app.example.com", "--log-level", "error"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() { cancel(); <-done }()
	base := "http://" + addr
	waitFor(t, "listening", 5*time.Second, func() bool { s, _ := get(t, base+"/health"); return s == 200 })
	post := func(host string, hdr ...string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/api/v1/display/keyboard/type", bytes.NewReader([]byte(`{"text":"id\n"}`)))
		req.Header.Set("Content-Type", "text/plain")
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e fault.ContainerError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Code
	}
	for _, tc := range []struct {
		name   string
		host   string
		hdr    []string
		status int
		code   string
	}{
		{"cross-site", "", []string{"Origin", "http://evil.example"}, 403, "FORBIDDEN"},
		{"rebinding", "evil.example", nil, 421, "MISDIRECTED_REQUEST"},
		{"allowed origin reaches the service", "", []string{"Origin", "https://app.example.com"}, 503, "DISPLAY_UNAVAILABLE"},
		{"name under --domain", "p-c-display-1.s.example.test", []string{"Origin", "https://p-c-files-1.s.example.test"}, 503, "DISPLAY_UNAVAILABLE"},
		{"curl", "", nil, 503, "DISPLAY_UNAVAILABLE"},
	} {
		if st, code := post(tc.host, tc.hdr...); st != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, st, code, tc.status, tc.code)
		}
	}
	bad := newRoot(io.Discard, io.Discard)
	bad.SetArgs([]string{"--listen", freePort(t), "--allowed-origins", "app.example.com"})
	if err := bad.Execute(); err == nil {
		t.Fatal("a bad --allowed-origins was accepted")
	}
}

// A cross-site page can open neither the takeover page nor its WebSocket:
// the request policy answers before the route does (here the route could
// only say the display is unavailable).
func TestTakeoverRefusesCrossSite(t *testing.T) {
	addr := freePort(t)
	cmd := newRoot(io.Discard, io.Discard)
	cmd.SetArgs([]string{"--listen", addr, "--display", "", "--log-level", "error"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() { cancel(); <-done }()
	base := "http://" + addr
	waitFor(t, "listening", 5*time.Second, func() bool { s, _ := get(t, base+"/health"); return s == 200 })
	ws := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, tc := range []struct {
		name, path string
		hdr        []string
		status     int
	}{
		{"cross-site page", "/api/v1/display/vnc/", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"cross-site WebSocket", "/api/v1/display/vnc/websockify", append([]string{"Origin", "http://evil.example"}, ws...), 403},
		{"same-origin WebSocket", "/api/v1/display/vnc/websockify", append([]string{"Origin", base}, ws...), 503},
		{"same-origin page", "/api/v1/display/vnc/", []string{"Sec-Fetch-Site", "same-origin"}, 503},
	} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			req.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
}
