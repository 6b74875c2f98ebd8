package identity_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"deckhand/control/identity"
)

// oathtool computes the code a real authenticator shows for secret at the
// server's (fake) time.
func (e *env) oathtool(secret string) string {
	e.t.Helper()
	out, err := exec.Command("oathtool", "--totp", "-b", "-N", fmt.Sprintf("@%d", e.clock.Now().Unix()), secret).Output()
	if err != nil {
		e.t.Fatalf("oathtool (apt install oathtool): %v", err)
	}
	return strings.TrimSpace(string(out))
}

// enable2FA turns two-factor on for the session and returns the secret and
// the backup codes.
func (e *env) enable2FA(access string) (string, []string) {
	e.t.Helper()
	setup := e.must(e.call("POST", "/api/v1/users/auth/2fa/setup", nil, access), 200).data()
	secret := setup["secret"].(string)
	if !strings.HasPrefix(setup["otpauth_url"].(string), "otpauth://totp/deckhand:") || !strings.Contains(setup["otpauth_url"].(string), "secret="+secret) {
		e.t.Fatalf("setup: %v", setup)
	}
	r := e.must(e.call("POST", "/api/v1/users/auth/2fa/verify-setup", map[string]any{"code": e.oathtool(secret)}, access), 200).data()
	var codes []string
	for _, c := range r["backup_codes"].([]any) {
		codes = append(codes, c.(string))
	}
	if len(codes) != 10 {
		e.t.Fatalf("backup codes: %v", r)
	}
	return secret, codes
}

func TestTwoFactorWithOathtool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("totp@example.com")["token"].(string)
	st := e.must(e.call("GET", "/api/v1/users/auth/2fa/status", nil, access), 200).data()
	if st["enabled"] != false {
		t.Fatalf("status: %v", st)
	}
	// A wrong code does not confirm setup.
	e.must(e.call("POST", "/api/v1/users/auth/2fa/setup", nil, access), 200)
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify-setup", map[string]any{"code": "000000"}, access), 401)
	secret, backup := e.enable2FA(access)
	st = e.must(e.call("GET", "/api/v1/users/auth/2fa/status", nil, access), 200).data()
	if st["enabled"] != true || st["backup_codes_remaining"] != float64(10) {
		t.Fatalf("status: %v", st)
	}
	e.must(e.call("POST", "/api/v1/users/auth/2fa/setup", nil, access), 409)

	// Login now answers a temp_token instead of tokens.
	step := func() map[string]any {
		r := e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "totp@example.com", "password": goodPassword}, ""), 200).data()
		if r["requires_2fa"] != true || r["temp_token"] == "" || r["token"] != nil {
			t.Fatalf("login with 2FA: %v", r)
		}
		return r
	}
	temp := step()["temp_token"].(string)
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"temp_token": temp, "code": "123456"}, ""), 401)
	e.clock.Advance(30 * time.Second) // the setup code's step is used up (replay guard)
	r := e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"temp_token": temp, "code": e.oathtool(secret)}, ""), 200).data()
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, r["token"].(string)), 200)
	// The temp token is single use, and a TOTP code is too.
	code := e.oathtool(secret)
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"temp_token": temp, "code": code}, ""), 401)
	temp = step()["temp_token"].(string)
	if r := e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": code}, temp), 401); r.str("error") != identity.CodeTwoFactorCodeUsed {
		t.Fatalf("reused TOTP code: %s", r.raw)
	}

	// Backup codes work once; the temp token also rides as Bearer.
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": strings.ToUpper(backup[0])}, temp), 200)
	temp = step()["temp_token"].(string)
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": backup[0]}, temp), 401)

	// Cancel kills a temp token.
	e.must(e.call("POST", "/api/v1/auth/intent/cancel", nil, temp), 204)
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": backup[1]}, temp), 401)

	// Five wrong codes burn a temp token.
	temp = step()["temp_token"].(string)
	for i := 0; i < 5; i++ {
		e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": "999999"}, temp), 401)
	}
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": backup[1]}, temp), 401)

	// Intent mode carries through the 2FA step.
	r = e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "totp@example.com", "password": goodPassword,
		"response_mode": "intent", "code_challenge": rfcChallenge}, ""), 200).data()
	e.clock.Advance(30 * time.Second)
	r = e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": e.oathtool(secret)}, r["temp_token"].(string)), 200).data()
	if r["auth_intent_token"] == nil || r["token"] != nil {
		t.Fatalf("intent after 2FA: %v", r)
	}
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"auth_intent_token": r["auth_intent_token"], "code_verifier": rfcVerifier}, ""), 200)

	// Regenerate: old backup codes stop working.
	e.clock.Advance(30 * time.Second)
	fresh := e.must(e.call("POST", "/api/v1/users/auth/2fa/backup-codes/regenerate", map[string]any{"code": e.oathtool(secret)}, access), 200).data()
	if len(fresh["backup_codes"].([]any)) != 10 {
		t.Fatalf("regenerate: %v", fresh)
	}
	temp = step()["temp_token"].(string)
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": backup[2]}, temp), 401)
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": fresh["backup_codes"].([]any)[0]}, temp), 200)

	// Token gate: creating svc_ tokens then needs X-2FA-Code.
	e.must(e.call("PUT", "/api/v1/users/auth/2fa/token-gate", map[string]any{}, access), 400)
	g := e.must(e.call("PUT", "/api/v1/users/auth/2fa/token-gate", map[string]any{"enabled": true}, access), 200).data()
	if g["token_gate"] != true {
		t.Fatalf("gate: %v", g)
	}
	e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "gated"}, access), 403)
	e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "gated"}, access, "X-2FA-Code", "111111"), 403)
	e.clock.Advance(30 * time.Second)
	e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "gated"}, access, "X-2FA-Code", e.oathtool(secret)), 201)
	// Turning the gate off needs a code, as turning two-factor off does.
	e.must(e.call("PATCH", "/api/v1/users/auth/2fa/token-gate", map[string]any{"enabled": false}, access), 400)
	e.must(e.call("PATCH", "/api/v1/users/auth/2fa/token-gate", map[string]any{"enabled": false, "code": "000000"}, access), 401)
	e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "still gated"}, access), 403)
	e.clock.Advance(30 * time.Second)
	e.must(e.call("PATCH", "/api/v1/users/auth/2fa/token-gate", map[string]any{"enabled": false, "code": e.oathtool(secret)}, access), 200)
	e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "open"}, access), 201)

	// Disable needs a code; then login gives tokens directly.
	e.must(e.call("DELETE", "/api/v1/users/auth/2fa", map[string]any{"code": "000000"}, access), 401)
	e.clock.Advance(30 * time.Second)
	e.must(e.call("DELETE", "/api/v1/users/auth/2fa", map[string]any{"code": e.oathtool(secret)}, access), 200)
	r = e.login("totp@example.com", goodPassword)
	if r["token"] == nil {
		t.Fatalf("login after disable: %v", r)
	}
}

func TestTwoFactorVerifyRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("rl2fa@example.com")["token"].(string)
	e.enable2FA(access)
	var last resp
	for i := 0; i < 20; i++ {
		temp := e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "rl2fa@example.com", "password": goodPassword}, ""), 200).str("data", "temp_token")
		last = e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": "000000"}, temp)
		if last.status == 429 {
			if i < 14 {
				t.Fatalf("429 after %d attempts", i+1)
			}
			break
		}
	}
	if last.status != 429 || last.header.Get("Retry-After") == "" {
		t.Fatalf("no 429 with Retry-After: %d %v", last.status, last.header)
	}
	// The window passes.
	e.clock.Advance(61 * time.Second)
	temp := e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "rl2fa@example.com", "password": goodPassword}, ""), 200).str("data", "temp_token")
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": "000000"}, temp), 401)
}

var _ = identity.DefaultLimits

func TestTwoFactorTempTokenExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("exp2fa@example.com")["token"].(string)
	_, backup := e.enable2FA(access)
	temp := e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "exp2fa@example.com", "password": goodPassword}, ""), 200).str("data", "temp_token")
	e.clock.Advance(6 * time.Minute)
	e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"code": backup[0]}, temp), 401)
}
