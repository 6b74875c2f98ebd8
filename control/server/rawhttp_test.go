package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest writes request bytes as they are on a new connection and
// reads one response.
func (r *running) rawRequest(t *testing.T, path, request string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A hang guard, not a timing assertion.
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	// The request the signature is checked against (its path is signed).
	req, _ := http.NewRequest(http.MethodGet, r.url+path, nil)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("%q: %v", request, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// TestOddMethodsAnswerSignedEnvelopes: a method the control plane does not
// know, or one with a control byte in it, gets the signed JSON envelope
// like every other refusal: 501 for a well-formed unknown method (RFC 9110
// 15.6.2), 400 for a malformed request line.
func TestOddMethodsAnswerSignedEnvelopes(t *testing.T) {
	t.Parallel()
	r := start(t, baseConfig(t), withTest(&testDomain{}))
	// A request that cannot be parsed has no path: its answer is signed
	// for "/".
	cases := []struct {
		name, method, signed string
		status               int
	}{
		{"unknown method", "FOO", "/api/v1/test/ip", 501},
		{"unknown method with a long name", strings.Repeat("X", 200), "/api/v1/test/ip", 501},
		{"control byte in the method", "GE\x01T", "/", 400},
		{"DEL in the method", "GET\x7f", "/", 400},
		{"non-ASCII method", "G\xc3\xa9T", "/", 400},
	}
	for _, tc := range cases {
		resp, raw := r.rawRequest(t, tc.signed, tc.method+" /api/v1/test/ip HTTP/1.1\r\nHost: "+strings.TrimPrefix(r.url, "http://")+"\r\nConnection: close\r\n\r\n")
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || resp.StatusCode != tc.status || m["statusCode"] != float64(tc.status) {
			t.Errorf("%s: %d %q, want %d in the envelope", tc.name, resp.StatusCode, raw, tc.status)
			continue
		}
		if msg, _ := m["message"].(string); !strings.Contains(msg, "method") {
			t.Errorf("%s: the message does not name the method: %q", tc.name, msg)
		}
		if _, err := r.v.VerifyResponse(resp, raw); err != nil {
			t.Errorf("%s: signature: %v", tc.name, err)
		}
	}
}

// TestSlowHeadersAreCut: a client that sends its request line and then
// trickles header bytes (slowloris) is closed once --header-timeout has
// passed, while a client that sends its headers in time and its body more
// slowly than that is still answered (the body has the read timeout).
func TestSlowHeadersAreCut(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	cfg.HeaderTimeout = 300 * time.Millisecond
	r := start(t, cfg, withTest(&testDomain{}))
	addr := strings.TrimPrefix(r.url, "http://")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A hang guard, far above the configured timeout and below the 60 s
	// read timeout that would close the connection anyway.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, "GET /api/v1/test/ip HTTP/1.1\r\nHost: "+addr+"\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	// Keep trickling one header byte at a time (far below any header size
	// limit) until the server closes: a write fails or the read sees the
	// end of the stream.
	closed := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, conn)
		closed <- err
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-closed:
			// The end of the stream or a reset (the server closed with
			// header bytes unread); only the hang guard is a failure.
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("a connection trickling its headers for 30 s is still open")
			}
			return
		case <-tick.C:
			if _, err := io.WriteString(conn, "a"); err != nil {
				if ne, ok := (<-closed).(net.Error); ok && ne.Timeout() {
					t.Fatal("a connection trickling its headers for 30 s is still open")
				}
				return
			}
		}
	}
}

// TestSlowBodyWithinReadTimeout: the header timeout does not cut a body
// that arrives after it, within the read timeout.
func TestSlowBodyWithinReadTimeout(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	cfg.HeaderTimeout = 200 * time.Millisecond
	r := start(t, cfg, withTest(&testDomain{}))
	addr := strings.TrimPrefix(r.url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	body := `{"name":"slow"}`
	if _, err := fmt.Fprintf(conn, "POST /api/v1/test/greet HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, len(body), body[:5]); err != nil {
		t.Fatal(err)
	}
	// Longer than the header timeout, far below the read timeout.
	time.Sleep(600 * time.Millisecond)
	if _, err := io.WriteString(conn, body[5:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(raw), "Hello slow") {
		t.Fatalf("slow body: %d %s", resp.StatusCode, raw)
	}
}
