package gateway_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"deckhand/agent/access"
	"deckhand/agent/gateway"
	"deckhand/platform/platformtest"
)

// TestForwardedForCannotSteerIPGroups: behind the platform proxy an `ip`
// group admits the client the proxy named, the right-most X-Forwarded-For
// hop over all lines. A client that writes an in-range address and leaves
// a right-most hop that is not a bare IP (a port, "unknown"), or whose own
// line is followed by the proxy's, is judged as the proxy's hop or the
// peer, never as the address it wrote.
func TestForwardedForCannotSteerIPGroups(t *testing.T) {
	t.Parallel()
	doc := filepath.Join(t.TempDir(), "perm.json")
	if err := os.WriteFile(doc, []byte(`{"project":"p1","container":"c1","default":"deny",
		"groups":{"office":{"type":"ip","range":"203.0.113.0/24"}},
		"permissions":{"office":{"files":true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := access.New(access.Config{PermissionsFile: doc, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "p1", "c1", func(c *gateway.Config) { c.TrustProxyHeaders = true; c.Authorizer = auth })
	cases := []struct {
		name  string
		lines []string
		want  int
	}{
		{"proxy names an office client", []string{"203.0.113.9"}, 200},
		{"proxy names an outside client", []string{"203.0.113.9, 198.51.100.7"}, 401},
		{"proxy appends its own line", []string{"198.51.100.7", "203.0.113.9"}, 200},
		{"client line after the proxy's is not taken", []string{"203.0.113.9", "198.51.100.7"}, 401},
		{"right-most hop with a port", []string{"203.0.113.9, 198.51.100.7:80"}, 401},
		{"right-most hop unknown", []string{"203.0.113.9, unknown"}, 401},
		{"right-most line unknown", []string{"203.0.113.9", "unknown"}, 401},
		{"bracketed IPv6 right-most", []string{"203.0.113.9, [2001:db8::1]"}, 401},
		{"empty right-most element", []string{"203.0.113.9,"}, 401},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodGet, f.url+"/_/files/api/v1/version", nil)
		for _, l := range tc.lines {
			req.Header.Add("X-Forwarded-For", l)
		}
		if status, body, _ := platformtest.Do(t, req); status != tc.want {
			t.Errorf("%s (%q): %d %v, want %d", tc.name, tc.lines, status, body, tc.want)
		}
	}
}

// TestForwardedForToServices: the one X-Forwarded-For a service gets is
// the client as the gateway judged it, the peer when the proxy's hop is
// unusable.
func TestForwardedForToServices(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "", func(c *gateway.Config) { c.TrustProxyHeaders = true; c.Authorizer = admitAll{} })
	for _, tc := range []struct {
		lines []string
		want  string
	}{
		{[]string{"6.6.6.6", "203.0.113.9"}, "203.0.113.9"},
		{[]string{"6.6.6.6, 1.2.3.4:80"}, "127.0.0.1"},
		{[]string{"6.6.6.6", "unknown"}, "127.0.0.1"},
	} {
		req, _ := http.NewRequest(http.MethodGet, f.url+"/_/notes/x", nil)
		for _, l := range tc.lines {
			req.Header.Add("X-Forwarded-For", l)
		}
		if _, m, raw := platformtest.Do(t, req); m["xff"] != tc.want {
			t.Errorf("%q: service saw %s, want X-Forwarded-For %s", tc.lines, raw, tc.want)
		}
	}
}
