package identitye2e_test

import (
	"strings"
	"testing"
)

func TestAuthTokenAllowListFromTwoAddresses(t *testing.T) {
	t.Parallel()
	s := start(t)
	access := s.account("ci@example.com")["token"].(string)
	tok := s.must(s.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "ci bot", "ip_whitelist": []string{"127.0.0.1"}, "expires_at": "tomorrow"}, access), 201).data()
	secret := tok["token"].(string)
	s.must(s.callWith(clientFrom(t, "127.0.0.1"), "GET", "/api/v1/users/auth/me", nil, secret), 200)
	r := s.must(s.callWith(clientFrom(t, "127.0.0.2"), "GET", "/api/v1/users/auth/me", nil, secret), 401)
	if !strings.Contains(r.str("message"), "IP") {
		t.Fatalf("%s", r.raw)
	}
	got := s.must(s.call("GET", "/api/v1/auth/tokens/"+tok["id"].(string), nil, access), 200).data()
	if got["last_used_ip"] != "127.0.0.1" || got["token"] != nil {
		t.Fatalf("record: %v", got)
	}
	// The token cannot lift its own limits; the session can.
	for _, body := range []map[string]any{{"ip_whitelist": nil}, {"expires_at": nil}, {"is_enabled": true}} {
		s.must(s.callWith(clientFrom(t, "127.0.0.1"), "PATCH", "/api/v1/auth/tokens/"+tok["id"].(string), body, secret), 403)
	}
	s.must(s.callWith(clientFrom(t, "127.0.0.2"), "GET", "/api/v1/users/auth/me", nil, secret), 401)
	s.must(s.call("PATCH", "/api/v1/auth/tokens/"+tok["id"].(string), map[string]any{"is_enabled": false, "expires_at": nil}, access), 200)
	s.must(s.callWith(clientFrom(t, "127.0.0.1"), "GET", "/api/v1/users/auth/me", nil, secret), 401)
	s.must(s.call("DELETE", "/api/v1/auth/tokens/"+tok["id"].(string), nil, access), 200)
	s.must(s.call("GET", "/api/v1/auth/tokens/"+tok["id"].(string), nil, access), 404)
}
