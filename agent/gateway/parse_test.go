package gateway_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"deckhand/agent/gateway"
	"deckhand/platform/platformtest"
)

// TestUnparsableRequests: a request the gateway cannot parse, or whose
// header block is over its limit, is answered with the container error
// body (400, 431), and the log line about it carries no credential.
func TestUnparsableRequests(t *testing.T) {
	t.Parallel()
	var logs platformtest.SyncBuffer
	f := newFixture(t, "", "", func(c *gateway.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	secrets := []string{"c2VjcmV0OnB3", "topsecret", "tok123"}
	creds := "Authorization: Basic c2VjcmV0OnB3\r\nCookie: sess=topsecret\r\nX-Token: tok123\r\n"
	for _, c := range []struct {
		name, raw string
		status    int
	}{
		{"header line without a colon", "GET /_/cron/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + creds + "Bad Header Line\r\n\r\n", 400},
		{"request line", "GET /_/cron/health HTTP/1.1 extra\r\nHost: 127.0.0.1\r\n" + creds + "\r\n", 400},
		{"header block over 64 KiB", "GET /_/cron/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + creds + "X-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", 431},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second)) // hang guard
		if _, err := io.WriteString(conn, c.raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		var m map[string]string
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			json.Unmarshal(body, &m) != nil || m["code"] == "" || m["message"] == "" {
			t.Errorf("%s: %d %s %s", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	// The log line is written as the connection ends.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "Bad Header Line") && !strings.Contains(logs.String(), "error when") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Fatalf("the log carries %q:\n%s", s, logs.String())
		}
	}
}
