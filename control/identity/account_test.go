package identity_test

import (
	"strings"
	"testing"
	"time"

	"deckhand/control/identity"
)

func TestSignupVerifyLoginRefreshReuseLogout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const email = "ada@example.com"
	r := e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": goodPassword}, ""), 200)
	if r.str("data", "email") != email {
		t.Fatalf("signup data: %s", r.raw)
	}
	// Inactive until verified.
	r = e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": goodPassword}, ""), 403)
	if !strings.Contains(r.str("message"), "not verified") || r.str("error") != "Forbidden" {
		t.Fatalf("unverified login: %s", r.raw)
	}
	ms := e.mails(email)
	if len(ms) != 1 || !strings.Contains(ms[0], "Subject: Verify your email address") || !strings.Contains(ms[0], e.url+"/auth/verify-email?token=") {
		t.Fatalf("verification mail: %q", ms)
	}
	tok := e.mailToken(email)
	e.must(e.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": tok}, ""), 200)
	r = e.must(e.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": tok}, ""), 400) // single use
	if !strings.Contains(r.str("message"), "token") {
		t.Fatalf("reused verify token: %s", r.raw)
	}

	login := e.login(email, goodPassword)
	access, refresh := login["token"].(string), login["refreshToken"].(string)
	user := login["user"].(map[string]any)
	if access == "" || refresh == "" || login["expires_at"] == "" || user["id"] == "" || user["is_banned"] != false {
		t.Fatalf("login result: %v", login)
	}
	exp, err := time.Parse(time.RFC3339, login["expires_at"].(string))
	if err != nil || exp.Sub(e.clock.Now()) < 23*time.Hour || exp.Sub(e.clock.Now()) > 25*time.Hour {
		t.Fatalf("expires_at %v: %v", login["expires_at"], err)
	}
	me := e.must(e.call("GET", "/api/v1/users/auth/me", nil, access), 200)
	if me.str("data", "id") != user["id"] || me.str("data", "email") != email {
		t.Fatalf("me: %s", me.raw)
	}

	// Header and body must agree byte for byte.
	r = e.must(e.callRefresh(refresh, refresh+"x"), 401)
	if r.str("message") != "Invalid refresh token" || r.str("error") != "Unauthorized" {
		t.Fatalf("mismatch: %s", r.raw)
	}
	e.must(e.call("POST", "/api/v1/users/auth/refresh", map[string]any{"refreshToken": refresh}, ""), 401)

	r1 := e.must(e.callRefresh(refresh, refresh), 200).data()
	access2, refresh2 := r1["token"].(string), r1["refreshToken"].(string)
	if refresh2 == refresh || access2 == access {
		t.Fatal("refresh did not rotate")
	}
	// A second tab refreshing with the same old token inside the grace
	// window gets the current pair, not a revocation.
	r2 := e.must(e.callRefresh(refresh, refresh), 200).data()
	if r2["refreshToken"] != refresh2 {
		t.Fatal("grace refresh should hand out the current refresh token")
	}
	// Outside the window, replaying the rotated token revokes the family.
	e.clock.Advance(30 * time.Second)
	r = e.must(e.callRefresh(refresh, refresh), 401)
	if !strings.Contains(r.str("message"), "Invalid refresh token") {
		t.Fatalf("reuse: %s", r.raw)
	}
	e.must(e.callRefresh(refresh2, refresh2), 401)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, access2), 401)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, access), 401)

	// A fresh login; logout kills its access and refresh tokens at once.
	login = e.login(email, goodPassword)
	access, refresh = login["token"].(string), login["refreshToken"].(string)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, access), 200)
	e.must(e.call("POST", "/api/v1/users/auth/logout", nil, access), 200)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, access), 401)
	e.must(e.callRefresh(refresh, refresh), 401)
	if ev := e.events(user["id"].(string)); len(ev) != 1 || ev[0] != "user.created" {
		t.Fatalf("events: %v", ev)
	}
}

func (e *env) callRefresh(header, body string) resp {
	e.t.Helper()
	return e.call("POST", "/api/v1/users/auth/refresh", map[string]any{"refreshToken": body}, header)
}

func TestAccessTokenExpiresAfterOneDay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	login := e.account("exp@example.com")
	e.clock.Advance(24*time.Hour + time.Minute)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, login["token"].(string)), 401)
	// The refresh token (7 days) still works and mints a new access token.
	r := e.must(e.callRefresh(login["refreshToken"].(string), login["refreshToken"].(string)), 200).data()
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, r["token"].(string)), 200)
	e.clock.Advance(7*24*time.Hour + time.Minute)
	e.must(e.callRefresh(r["refreshToken"].(string), r["refreshToken"].(string)), 401)
}

func TestSignupValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name   string
		body   any
		status int
		want   string
	}{
		{"short password", map[string]any{"email": "a@example.com", "password": "Ab1!short"}, 400, "password: must be at least 12 characters"},
		{"no special", map[string]any{"email": "a@example.com", "password": "Abcdefghijk1"}, 400, "password: must be at least 12"},
		{"no upper", map[string]any{"email": "a@example.com", "password": "abcdefghij1!"}, 400, "password"},
		{"no digit", map[string]any{"email": "a@example.com", "password": "Abcdefghijk!"}, 400, "password"},
		{"bad email", map[string]any{"email": "not-an-email", "password": goodPassword}, 400, "email: must be a valid email address"},
		{"missing email", map[string]any{"password": goodPassword}, 400, "email: is required"},
		{"unknown field", map[string]any{"email": "a@example.com", "password": goodPassword, "admin": true}, 400, "admin: unknown field"},
		{"wrong type", map[string]any{"email": 5, "password": goodPassword}, 400, "email"},
		{"bad region", map[string]any{"email": "a@example.com", "password": goodPassword, "region": "EU WEST!"}, 400, "region"},
		{"malformed", "{", 400, "body: "},
	}
	for _, tc := range cases {
		r := e.call("POST", "/api/v1/auth/signup", tc.body, "")
		if r.status != tc.status || !strings.Contains(r.str("message"), tc.want) || r.str("error") != "Bad Request" {
			t.Errorf("%s: %d %s", tc.name, r.status, r.raw)
		}
	}
	if len(e.mails("a@example.com")) != 0 {
		t.Fatal("a rejected signup sent mail")
	}
}

func TestSignupsDisabled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(d *identity.Deps) { d.Signups = false })
	r := e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": "x@example.com", "password": goodPassword}, ""), 403)
	if r.str("error") != "Forbidden" || !strings.Contains(r.str("message"), "signups are disabled") {
		t.Fatalf("%s", r.raw)
	}
}

func TestSignupNeverRevealsExistingEmail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.account("taken@example.com")
	a := e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": "taken@example.com", "password": goodPassword}, ""), 200)
	b := e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": "fresh@example.com", "password": goodPassword}, ""), 200)
	if a.str("message") != b.str("message") {
		t.Fatalf("answers differ: %s vs %s", a.raw, b.raw)
	}
	ms := e.mails("taken@example.com")
	if len(ms) != 2 || !strings.Contains(ms[1], "already exists") {
		t.Fatalf("notice mail missing: %d", len(ms))
	}
}

func TestLoginRulesAndCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	login := e.account("bob@example.com")
	username := login["user"].(map[string]any)["username"].(string)
	// By username too.
	e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"username": username, "password": goodPassword}, ""), 200)
	cases := []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		// The password's shape is never checked at login: a short wrong
		// password is a wrong password.
		{"short wrong password", map[string]any{"email": "bob@example.com", "password": "short"}, 401, "Invalid login credentials"},
		{"no password", map[string]any{"email": "bob@example.com"}, 400, "password"},
		{"no identifier", map[string]any{"password": goodPassword}, 400, "username or email is required"},
		{"both identifiers", map[string]any{"email": "bob@example.com", "username": "bob", "password": goodPassword}, 400, "not both"},
		{"intent without challenge", map[string]any{"email": "bob@example.com", "password": goodPassword, "response_mode": "intent"}, 400, "code_challenge: is required"},
		{"bad mode", map[string]any{"email": "bob@example.com", "password": goodPassword, "response_mode": "cookie"}, 400, "response_mode"},
		{"wrong password", map[string]any{"email": "bob@example.com", "password": "Wrong-password1"}, 401, "Invalid login credentials"},
		{"unknown account", map[string]any{"email": "nobody@example.com", "password": "Wrong-password1"}, 401, "Invalid login credentials"},
	}
	for _, tc := range cases {
		r := e.call("POST", "/api/v1/users/auth/login", tc.body, "")
		if r.status != tc.status || !strings.Contains(r.str("message"), tc.want) {
			t.Errorf("%s: %d %s", tc.name, r.status, r.raw)
		}
	}
}

func TestForgotAndResetPassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	login := e.account("carol@example.com")
	a := e.must(e.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": "carol@example.com"}, ""), 200)
	b := e.must(e.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": "ghost@example.com"}, ""), 200)
	if a.str("message") != b.str("message") {
		t.Fatal("forgot-password reveals whether the email exists")
	}
	if len(e.mails("ghost@example.com")) != 0 {
		t.Fatal("mail to an unknown address")
	}
	tok := e.mailToken("carol@example.com")
	r := e.must(e.call("POST", "/api/v1/auth/reset-password", map[string]any{"token": tok, "password": "weak"}, ""), 400)
	if !strings.Contains(r.str("message"), "password: must be at least 12") {
		t.Fatalf("%s", r.raw)
	}
	const newPW = "Another-Secret-42x"
	e.must(e.call("POST", "/api/v1/auth/reset-password", map[string]any{"token": tok, "password": newPW}, ""), 200)
	e.must(e.call("POST", "/api/v1/auth/reset-password", map[string]any{"token": tok, "password": newPW}, ""), 400)
	// Old sessions end, the old password stops working, the new one works.
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, login["token"].(string)), 401)
	e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "carol@example.com", "password": goodPassword}, ""), 401)
	e.login("carol@example.com", newPW)
}

// RFC 7636 Appendix B: verifier dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk
// has the S256 challenge E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM.
const (
	rfcVerifier  = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	rfcChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

func TestIntentModeWithRFC7636Vector(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.account("dan@example.com")
	intent := func() string {
		r := e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "dan@example.com", "password": goodPassword,
			"response_mode": "intent", "code_challenge": rfcChallenge}, ""), 200).data()
		if r["token"] != nil || r["auth_intent_token"] == "" {
			t.Fatalf("intent login: %v", r)
		}
		return r["auth_intent_token"].(string)
	}
	// Wrong verifier: 401, and the token is burnt.
	tok := intent()
	wrong := strings.Repeat("a", 43)
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"auth_intent_token": tok, "code_verifier": wrong}, ""), 401)
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"auth_intent_token": tok, "code_verifier": rfcVerifier}, ""), 401)
	// Right verifier: tokens, once.
	tok = intent()
	r := e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"auth_intent_token": tok, "code_verifier": rfcVerifier}, ""), 200).data()
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, r["token"].(string)), 200)
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"auth_intent_token": tok, "code_verifier": rfcVerifier}, ""), 401)
	// Cancel: idempotent 204, and the token no longer exchanges.
	tok = intent()
	e.must(e.call("POST", "/api/v1/auth/intent/cancel", nil, tok), 204)
	e.must(e.call("POST", "/api/v1/auth/intent/cancel", nil, tok), 204)
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"auth_intent_token": tok, "code_verifier": rfcVerifier}, ""), 401)
	e.must(e.call("POST", "/api/v1/auth/intent/cancel", nil, ""), 401)
	// Expiry.
	tok = intent()
	e.clock.Advance(6 * time.Minute)
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"auth_intent_token": tok, "code_verifier": rfcVerifier}, ""), 401)
}

// Credentials of different users alternating on one keep-alive connection
// must each resolve to their own account (the credential cache must not
// keep views into reused request buffers).
func TestAlternatingCredentialsOnOneConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.account("alt-a@example.com")["token"].(string)
	b := e.account("alt-b@example.com")["token"].(string)
	sa := e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "a"}, a), 201).str("data", "token")
	sb := e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "b"}, b), 201).str("data", "token")
	creds := []struct{ tok, email string }{{a, "alt-a@example.com"}, {b, "alt-b@example.com"}, {sa, "alt-a@example.com"}, {sb, "alt-b@example.com"}}
	for i := 0; i < 20; i++ {
		c := creds[i%len(creds)]
		if got := e.must(e.call("GET", "/api/v1/users/auth/me", nil, c.tok), 200).str("data", "email"); got != c.email {
			t.Fatalf("round %d: %s resolved to %s", i, c.email, got)
		}
	}
}

// A stranger who registers someone's address first cannot keep a password
// on the account once its owner signs up and verifies.
func TestSignupPreHijackingDefeated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const email = "owner@example.com"
	e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": "Attacker-pass-1"}, ""), 200)
	e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": goodPassword}, ""), 200)
	e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": "Attacker-pass-2"}, ""), 200)
	ms := e.mails(email)
	if len(ms) != 3 {
		t.Fatalf("%d mails", len(ms))
	}
	owners := tokenInMail.FindStringSubmatch(ms[1])[1] // the link the owner's own signup mailed
	e.must(e.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": owners}, ""), 200)
	e.login(email, goodPassword)
	e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": "Attacker-pass-1"}, ""), 401)
	e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": "Attacker-pass-2"}, ""), 401)
	// The stranger's link, clicked later, changes nothing.
	e.must(e.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": tokenInMail.FindStringSubmatch(ms[2])[1]}, ""), 200)
	e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": "Attacker-pass-2"}, ""), 401)
	e.login(email, goodPassword)
}
