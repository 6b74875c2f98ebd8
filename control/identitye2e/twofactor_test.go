package identitye2e_test

import (
	"strings"
	"testing"
	"time"
)

func TestTwoFactorWithOathtool(t *testing.T) {
	t.Parallel()
	s := start(t)
	access := s.account("totp@example.com")["token"].(string)
	setup := s.must(s.call("POST", "/api/v1/users/auth/2fa/setup", nil, access), 200).data()
	secret := setup["secret"].(string)
	now := time.Now()
	step := now.Unix() / 30
	codes := s.must(s.call("POST", "/api/v1/users/auth/2fa/verify-setup", map[string]any{"code": oathtool(t, secret, now)}, access), 200).data()["backup_codes"].([]any)
	if len(codes) != 10 {
		t.Fatalf("backup codes: %v", codes)
	}
	login := s.must(s.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "totp@example.com", "password": goodPW}, ""), 200)
	temp := login.str("data", "temp_token")
	if temp == "" {
		t.Fatal("no temp_token with 2FA on")
	}
	// The answer says the login is not done yet.
	if msg := login.str("message"); !strings.Contains(msg, "two-factor code required") || strings.Contains(msg, "Login successful") {
		t.Fatalf("login with 2FA on answers %q", msg)
	}
	s.must(s.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"temp_token": temp, "code": "000000"}, ""), 401)
	// The setup step is spent; the next step's code (within the accepted skew) works.
	next := oathtool(t, secret, time.Unix((step+1)*30, 0))
	r := s.must(s.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"temp_token": temp, "code": next}, ""), 200).data()
	s.must(s.call("GET", "/api/v1/users/auth/me", nil, r["token"].(string)), 200)
	// The same code again is refused as already used, with its own code.
	temp = s.must(s.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "totp@example.com", "password": goodPW}, ""), 200).str("data", "temp_token")
	reused := s.must(s.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"temp_token": temp, "code": next}, ""), 401)
	if reused.str("error") != "TWO_FACTOR_CODE_USED" || !strings.Contains(reused.str("message"), "already used") {
		t.Fatalf("reused code: %s", reused.raw)
	}
	// A wrong code keeps the generic refusal.
	if wrong := s.must(s.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"temp_token": temp, "code": "000000"}, ""), 401); wrong.str("error") != "Unauthorized" {
		t.Fatalf("wrong code: %s", wrong.raw)
	}
	// Backup code, once.
	temp = s.must(s.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "totp@example.com", "password": goodPW}, ""), 200).str("data", "temp_token")
	s.must(s.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": codes[0]}, temp), 200)
	temp = s.must(s.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "totp@example.com", "password": goodPW}, ""), 200).str("data", "temp_token")
	s.must(s.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": codes[0]}, temp), 401)
	// Cancel the temp token.
	s.must(s.call("POST", "/api/v1/auth/intent/cancel", nil, temp), 204)
	s.must(s.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": codes[1]}, temp), 401)
	st := s.must(s.call("GET", "/api/v1/users/auth/2fa/status", nil, access), 200).data()
	if st["enabled"] != true || st["backup_codes_remaining"] != float64(9) {
		t.Fatalf("status %v", st)
	}
	if !strings.Contains(setup["otpauth_url"].(string), "secret="+secret) {
		t.Fatalf("otpauth url %v", setup["otpauth_url"])
	}
}

// TestTokenGateOffNeedsCode: a session alone cannot open the token gate.
// Turning it off without a code is refused as turning two-factor off is
// (same status), nothing changes and an svc_ token still needs a code;
// with a current TOTP code the gate opens.
func TestTokenGateOffNeedsCode(t *testing.T) {
	t.Parallel()
	s := start(t)
	access := s.account("gate@example.com")["token"].(string)
	secret := s.must(s.call("POST", "/api/v1/users/auth/2fa/setup", nil, access), 200).data()["secret"].(string)
	now := time.Now()
	step := now.Unix() / 30
	s.must(s.call("POST", "/api/v1/users/auth/2fa/verify-setup", map[string]any{"code": oathtool(t, secret, now)}, access), 200)
	s.must(s.call("PUT", "/api/v1/users/auth/2fa/token-gate", map[string]any{"enabled": true}, access), 200)

	disable := s.call("DELETE", "/api/v1/users/auth/2fa", map[string]any{}, access)
	for _, method := range []string{"PUT", "PATCH"} {
		off := s.call(method, "/api/v1/users/auth/2fa/token-gate", map[string]any{"enabled": false}, access)
		if off.status != disable.status || off.status < 400 || off.str("error") != disable.str("error") || !strings.Contains(off.str("message"), "code") {
			t.Fatalf("%s gate off without a code: %d %s; disabling 2FA without one: %d %s", method, off.status, off.raw, disable.status, disable.raw)
		}
		s.must(s.call(method, "/api/v1/users/auth/2fa/token-gate", map[string]any{"enabled": false, "code": "000000"}, access), 401)
	}
	if st := s.must(s.call("GET", "/api/v1/users/auth/2fa/status", nil, access), 200).data(); st["token_gate"] != true || st["enabled"] != true {
		t.Fatalf("refused gate changes changed the status: %v", st)
	}
	s.must(s.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "no code"}, access), 403)

	// The next step's code opens the gate; then a token needs no code.
	open := s.must(s.call("PUT", "/api/v1/users/auth/2fa/token-gate",
		map[string]any{"enabled": false, "code": oathtool(t, secret, time.Unix((step+1)*30, 0))}, access), 200).data()
	if open["token_gate"] != false {
		t.Fatalf("gate after a good code: %v", open)
	}
	if tok := s.must(s.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "open"}, access), 201).str("data", "token"); !strings.HasPrefix(tok, "svc_") {
		t.Fatalf("token after the gate opened: %q", tok)
	}
}
