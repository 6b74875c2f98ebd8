package platform_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
)

// TestUnknownMethodsInTheErrorBody: a container service answers a method
// its router does not know, or one that is not an HTTP token, in its own
// error body (the kernel's request id included), never Fiber's bare text;
// the WebDAV methods still reach MethodAny routes.
func TestUnknownMethodsInTheErrorBody(t *testing.T) {
	t.Parallel()
	dav := []platform.Route{{Method: platform.MethodAny, Path: "/dav", Summary: "any",
		HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"method":"`+r.Method+`"}`) })}}
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "t"}}, dav)
	addr := strings.TrimPrefix(serve(t, h), "http://")
	cases := []struct {
		method   string
		status   int
		code     string
		withRID  bool
		propfind bool
	}{
		{"FOO", 501, "NOT_IMPLEMENTED", true, false},
		{"GE\x01T", 400, "BAD_REQUEST", false, false},
		{"G(T", 400, "BAD_REQUEST", false, false},
		{"PROPFIND", 200, "", true, true},
	}
	for _, tc := range cases {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second)) // a hang guard
		_, _ = io.WriteString(conn, tc.method+" /dav HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.method, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if tc.propfind {
			if resp.StatusCode != 200 || m["method"] != "PROPFIND" {
				t.Errorf("PROPFIND: %d %s", resp.StatusCode, raw)
			}
			continue
		}
		if resp.StatusCode != tc.status || m["code"] != tc.code || m["details"] != "method" {
			t.Errorf("%q: %d %s, want %d %s naming the method", tc.method, resp.StatusCode, raw, tc.status, tc.code)
		}
		if tc.withRID && resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%q: no request id: the kernel did not answer", tc.method)
		}
	}
}

// TestHeaderTimeout: a connection that sends nothing before the header
// timeout is closed without an answer (a browser may use a connection it
// opened ahead of need long after; an answer queued on it would be read
// as the answer to its request), while one that began a request and
// stalled is answered with the timeout error.
func TestHeaderTimeout(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "t"},
		HeaderTimeout: 200 * time.Millisecond}, nil)
	addr := strings.TrimPrefix(serve(t, h), "http://")
	for _, tc := range []struct {
		name, sent string
		answered   bool
	}{
		{"nothing sent", "", false},
		{"headers cut short", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", true},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second)) // a hang guard
		_, _ = io.WriteString(conn, tc.sent)
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if answered := len(got) > 0; answered != tc.answered {
			t.Errorf("%s: answered %v (%q), want %v", tc.name, answered, got, tc.answered)
		}
		if tc.answered && (!strings.HasPrefix(string(got), "HTTP/1.1 408 ") || !strings.Contains(string(got), `"TIMEOUT"`)) {
			t.Errorf("%s: %q is not the timeout error", tc.name, got)
		}
	}
}
