package identitye2e_test

import (
	"net/http"
	"testing"
)

// TestTokenAllowListBehindProxy: under --trust-proxy-headers a token's
// ip_whitelist judges the client the proxy named, the right-most
// X-Forwarded-For hop over every header line. A client that writes an
// allowed address gets nowhere by leaving a right-most hop that is not a
// bare IP, nor when the proxy appends its own line after the client's.
func TestTokenAllowListBehindProxy(t *testing.T) {
	t.Parallel()
	s := start(t, "--trust-proxy-headers")
	access := s.account("proxied@example.com")["token"].(string)
	secret := s.must(s.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "office bot",
		"ip_whitelist": []string{"203.0.113.0/24"}}, access), 201).data()["token"].(string)
	cases := []struct {
		name  string
		lines []string
		want  int
	}{
		{"proxy names an office client", []string{"203.0.113.9"}, 200},
		{"proxy appends its line to the client's", []string{"203.0.113.9, 198.51.100.7"}, 401},
		{"proxy appends a header line of its own", []string{"203.0.113.9", "198.51.100.7"}, 401},
		{"office client behind a client-written line", []string{"198.51.100.7", "203.0.113.9"}, 200},
		{"right-most hop with a port", []string{"203.0.113.9, 198.51.100.7:80"}, 401},
		{"right-most hop unknown", []string{"203.0.113.9, unknown"}, 401},
		{"right-most line unknown", []string{"203.0.113.9", "unknown"}, 401},
		{"empty right-most element", []string{"203.0.113.9, "}, 401},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/api/v1/users/auth/me", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		for _, l := range tc.lines {
			req.Header.Add("X-Forwarded-For", l)
		}
		res, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%s (%q): %d, want %d", tc.name, tc.lines, res.StatusCode, tc.want)
		}
	}
}
