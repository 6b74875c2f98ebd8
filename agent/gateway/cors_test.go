package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"deckhand/agent/gateway"
	"deckhand/platform/platformtest"
	"deckhand/platform/reqpolicy"
)

// TestGatewayCORS: the gateway answers a preflight from an allowed origin
// itself, before routing and before the Authorizer (a preflight carries
// no credentials), refuses a preflight from any other origin with the
// policy's 403, and puts the CORS headers on every answer to an allowed
// foreign origin: the service's, and its own errors (the Authorizer's
// refusal, an unknown service, a service that is down).
func TestGatewayCORS(t *testing.T) {
	t.Parallel()
	const app = "https://app.example.com"
	auth := fixedAuth{saw: make(chan seen, 64)}
	f := newFixture(t, "", "", func(c *gateway.Config) {
		c.Authorizer = auth
		c.Policy, _ = reqpolicy.NewRequestPolicy(c.Domain, []string{app})
	})
	send := func(method, path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, f.url+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return platformtest.DoResponse(t, req)
	}
	preflight := []string{"Origin", app, "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization,content-type,idempotency-key"}
	for _, p := range []string{"/_/notes/x", "/_/cron/api/v1/cron/entries", "/_/terminal/x", "/_/bogus/x", "/elsewhere"} {
		resp, body := send("OPTIONS", p, preflight...)
		if resp.StatusCode != 204 || body != "" {
			t.Errorf("preflight %s: %d %q", p, resp.StatusCode, body)
			continue
		}
		for k, v := range map[string]string{
			"Access-Control-Allow-Origin": app, "Access-Control-Allow-Credentials": "true",
			"Access-Control-Allow-Methods": reqpolicy.CORSAllowMethods, "Access-Control-Max-Age": reqpolicy.CORSMaxAge,
			"Access-Control-Allow-Headers": "authorization, content-type, idempotency-key",
		} {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("preflight %s: %s = %q, want %q", p, k, got, v)
			}
		}
		if resp.Header.Get("Access-Control-Allow-Private-Network") != "" {
			t.Errorf("preflight %s: Private Network allowed unasked", p)
		}
	}
	resp, _ := send("OPTIONS", "/_/notes/x", "Origin", app, "Access-Control-Request-Method", "GET", "Access-Control-Request-Private-Network", "true")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Private-Network") != "true" {
		t.Errorf("private network preflight: %d %v", resp.StatusCode, resp.Header)
	}
	for _, o := range []string{"https://evil.example", "null", "http://127.0.0.1:9"} {
		resp, body := send("OPTIONS", "/_/notes/x", "Origin", o, "Access-Control-Request-Method", "POST")
		if resp.StatusCode != 403 || !strings.Contains(body, `"FORBIDDEN"`) || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s: %d %v %s", o, resp.StatusCode, resp.Header, body)
		}
	}
	if n := len(auth.saw); n != 0 {
		t.Fatalf("preflights reached the Authorizer %d times", n)
	}
	// Real requests: the Authorizer decides, and every answer is readable.
	for _, tc := range []struct {
		name, method, path string
		hdr                []string
		status             int
		code               string
	}{
		{"admitted, proxied to a plain upstream", "GET", "/_/notes/x", []string{"X-Let-In", "1"}, 200, ""},
		{"refused by the Authorizer", "POST", "/_/notes/x", nil, 401, "UNAUTHORIZED"},
		{"unknown service", "GET", "/_/bogus/x", nil, 404, "NOT_FOUND"},
		{"service down", "GET", "/_/terminal/x", []string{"X-Let-In", "1"}, 502, "BACKEND_ERROR"},
		{"OPTIONS without Access-Control-Request-Method is routed", "OPTIONS", "/_/notes/x", []string{"X-Let-In", "1"}, 200, ""},
	} {
		resp, body := send(tc.method, tc.path, append([]string{"Origin", app}, tc.hdr...)...)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.code) {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != app || resp.Header.Get("Access-Control-Allow-Credentials") != "true" ||
			!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Journal-Cursor") ||
			len(resp.Header.Values("Access-Control-Allow-Origin")) != 1 || resp.Header.Get("Vary") != "Origin" {
			t.Errorf("%s: CORS headers %v", tc.name, resp.Header)
		}
	}
	// Own origin and no origin: no CORS headers.
	own := f.url
	for _, hdr := range [][]string{{"Origin", own, "X-Let-In", "1"}, {"X-Let-In", "1"}} {
		resp, body := send("GET", "/_/notes/x", hdr...)
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Vary") != "" {
			t.Errorf("%v: %d %v %s", hdr, resp.StatusCode, resp.Header, body)
		}
	}
	// A refused origin's real request: the policy's 403, no CORS headers,
	// and the Authorizer never asked.
	before := len(auth.saw)
	resp, body := send("GET", "/_/notes/x", "Origin", "https://evil.example", "X-Let-In", "1")
	if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" || len(auth.saw) != before {
		t.Errorf("refused origin: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}
