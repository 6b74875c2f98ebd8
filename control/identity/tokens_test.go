package identity_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// clientFrom dials the server from a chosen loopback source address.
func clientFrom(t *testing.T, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestAuthTokenLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	login := e.account("tok@example.com")
	access := login["token"].(string)
	r := e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "ci runner_1-a", "expires_at": "tomorrow"}, access), 201)
	d := r.data()
	secret, id := d["token"].(string), d["id"].(string)
	if !strings.HasPrefix(secret, "svc_") || len(secret) < 40 || d["prefix"] != "svc_" || d["is_enabled"] != true {
		t.Fatalf("create: %s", r.raw)
	}
	exp, _ := time.Parse(time.RFC3339Nano, d["expires_at"].(string))
	if got := exp.Sub(e.clock.Now()); got < 23*time.Hour || got > 25*time.Hour {
		t.Fatalf("tomorrow = %v from now", got)
	}
	if d["last_used_at"] != nil {
		t.Fatal("unused token has last_used_at")
	}
	// The secret is a Bearer credential everywhere a session JWT is.
	me := e.must(e.call("GET", "/api/v1/users/auth/me", nil, secret), 200)
	if me.str("data", "email") != "tok@example.com" {
		t.Fatalf("me with svc token: %s", me.raw)
	}
	// Only create shows the secret; usage is tracked.
	g := e.must(e.call("GET", "/api/v1/auth/tokens/"+id, nil, access), 200)
	if strings.Contains(string(g.raw), secret) || g.data()["token"] != nil {
		t.Fatal("GET leaks the secret")
	}
	if g.data()["last_used_at"] == nil || g.data()["last_used_ip"] != "127.0.0.1" {
		t.Fatalf("usage not tracked: %s", g.raw)
	}
	l := e.must(e.call("GET", "/api/v1/auth/tokens", nil, access), 200)
	if list, _ := l.body["data"].([]any); len(list) != 1 || strings.Contains(string(l.raw), secret) {
		t.Fatalf("list: %s", l.raw)
	}
	// Disable, re-enable.
	e.must(e.call("PATCH", "/api/v1/auth/tokens/"+id, map[string]any{"is_enabled": false}, access), 200)
	r = e.must(e.call("GET", "/api/v1/users/auth/me", nil, secret), 401)
	if !strings.Contains(r.str("message"), "disabled") {
		t.Fatalf("%s", r.raw)
	}
	e.must(e.call("PATCH", "/api/v1/auth/tokens/"+id, map[string]any{"is_enabled": true}, access), 200)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, secret), 200)
	// Expiry passes; null clears it (PATCH only).
	e.clock.Advance(25 * time.Hour)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, secret), 401)
	access = e.login("tok@example.com", goodPassword)["token"].(string)
	p := e.must(e.call("PATCH", "/api/v1/auth/tokens/"+id, map[string]any{"expires_at": nil, "alias": "renamed"}, access), 200)
	if p.data()["expires_at"] != nil || p.data()["alias"] != "renamed" {
		t.Fatalf("patch: %s", p.raw)
	}
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, secret), 200)
	// Another user cannot see or touch it.
	other := e.account("other@example.com")["token"].(string)
	e.must(e.call("GET", "/api/v1/auth/tokens/"+id, nil, other), 404)
	e.must(e.call("DELETE", "/api/v1/auth/tokens/"+id, nil, other), 404)
	// Delete revokes permanently.
	e.must(e.call("DELETE", "/api/v1/auth/tokens/"+id, nil, access), 200)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, secret), 401)
	e.must(e.call("GET", "/api/v1/auth/tokens/"+id, nil, access), 404)

	got := strings.Join(e.events(id), ",")
	want := "auth.token.created,auth.token.disabled,auth.token.enabled,auth.token.updated,auth.token.deleted"
	if got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
}

func TestAuthTokenValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("val@example.com")["token"].(string)
	now := e.clock.Now()
	cases := []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		{"empty alias", map[string]any{"alias": ""}, 400, "alias: must be 1 to 254 characters"},
		{"bad alias char", map[string]any{"alias": "ci/runner"}, 400, "alias: must be 1 to 254"},
		{"long alias", map[string]any{"alias": strings.Repeat("a", 255)}, 400, "alias"},
		{"max alias", map[string]any{"alias": strings.Repeat("a", 254)}, 201, ""},
		{"bad ip", map[string]any{"alias": "x", "ip_whitelist": []string{"10.0.0.300"}}, 400, "ip_whitelist"},
		{"cidr ok", map[string]any{"alias": "x", "ip_whitelist": []string{"10.0.0.0/8", "::1"}}, 201, ""},
		{"null expiry on create", map[string]any{"alias": "x", "expires_at": nil}, 400, "expires_at: null is valid only in PATCH"},
		{"past expiry", map[string]any{"alias": "x", "expires_at": now.Add(-time.Hour).Format(time.RFC3339)}, 400, "expires_at: must be in the future"},
		{"garbage expiry", map[string]any{"alias": "x", "expires_at": "next week"}, 400, "expires_at: must be an ISO 8601 time"},
		{"iso expiry", map[string]any{"alias": "x", "expires_at": now.Add(48 * time.Hour).Format(time.RFC3339)}, 201, ""},
		{"unix expiry", map[string]any{"alias": "x", "expires_at": now.Add(48 * time.Hour).Unix()}, 201, ""},
		{"today", map[string]any{"alias": "x", "expires_at": "today"}, 201, ""},
		{"unknown field", map[string]any{"alias": "x", "scope": "all"}, 400, "scope: unknown field"},
	}
	for _, tc := range cases {
		r := e.call("POST", "/api/v1/auth/tokens", tc.body, access)
		if r.status != tc.status || (tc.want != "" && !strings.Contains(r.str("message"), tc.want)) {
			t.Errorf("%s: %d %s", tc.name, r.status, r.raw)
		}
		if tc.name == "today" && r.status == 201 {
			exp, _ := time.Parse(time.RFC3339Nano, r.str("data", "expires_at"))
			y, m, d := now.Date()
			if !exp.Equal(time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("today = %v", exp)
			}
		}
	}
	// Tokens cannot mint tokens.
	svc := e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "svc"}, access), 201).str("data", "token")
	e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "child"}, svc), 403)
}

func TestAuthTokenIPAllowList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("ip@example.com")["token"].(string)
	secret := e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "pinned", "ip_whitelist": []string{"127.0.0.1"}}, access), 201).str("data", "token")
	from1, from2 := clientFrom(t, "127.0.0.1"), clientFrom(t, "127.0.0.2")
	e.must(e.callWith(from1, "GET", "/api/v1/users/auth/me", nil, secret), 200)
	r := e.must(e.callWith(from2, "GET", "/api/v1/users/auth/me", nil, secret), 401)
	if !strings.Contains(r.str("message"), "not allowed from this IP") {
		t.Fatalf("%s", r.raw)
	}
	// A session JWT is not IP-bound.
	e.must(e.callWith(from2, "GET", "/api/v1/users/auth/me", nil, access), 200)
	// Widening the list to the range admits the other address.
	id := e.must(e.call("GET", "/api/v1/auth/tokens", nil, access), 200).body["data"].([]any)[0].(map[string]any)["id"].(string)
	e.must(e.call("PATCH", "/api/v1/auth/tokens/"+id, map[string]any{"ip_whitelist": []string{"127.0.0.0/30"}}, access), 200)
	e.must(e.callWith(from2, "GET", "/api/v1/users/auth/me", nil, secret), 200)
	g := e.must(e.call("GET", "/api/v1/auth/tokens/"+id, nil, access), 200)
	if g.data()["last_used_ip"] != "127.0.0.2" {
		t.Fatalf("last_used_ip: %s", g.raw)
	}
}

// An svc_ token must not widen its own rights or another
// token's: ip_whitelist, expires_at and is_enabled change only with a
// session; alias is cosmetic and a token may change it.
func TestAuthTokenPatchNeedsSessionForSecurityFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("esc@example.com")["token"].(string)
	mk := func(body map[string]any) (id, secret string) {
		d := e.must(e.call("POST", "/api/v1/auth/tokens", body, access), 201).data()
		return d["id"].(string), d["token"].(string)
	}
	selfID, self := mk(map[string]any{"alias": "pinned", "ip_whitelist": []string{"127.0.0.1"}, "expires_at": "tomorrow"})
	otherID, _ := mk(map[string]any{"alias": "other", "expires_at": "tomorrow"})
	e.must(e.call("PATCH", "/api/v1/auth/tokens/"+otherID, map[string]any{"is_enabled": false}, access), 200)

	cases := []struct {
		name, id string
		body     map[string]any
	}{
		{"clear own ip_whitelist", selfID, map[string]any{"ip_whitelist": nil}},
		{"widen own ip_whitelist", selfID, map[string]any{"ip_whitelist": []string{"0.0.0.0/0"}}},
		{"clear own expiry", selfID, map[string]any{"expires_at": nil}},
		{"extend own expiry", selfID, map[string]any{"expires_at": e.clock.Now().Add(365 * 24 * time.Hour).Unix()}},
		{"re-enable another token", otherID, map[string]any{"is_enabled": true}},
		{"clear another token's expiry", otherID, map[string]any{"expires_at": nil}},
		{"disable self", selfID, map[string]any{"is_enabled": false}},
		{"alias with a security field", selfID, map[string]any{"alias": "x", "ip_whitelist": nil}},
	}
	for _, tc := range cases {
		r := e.call("PATCH", "/api/v1/auth/tokens/"+tc.id, tc.body, self)
		if r.status != 403 || !strings.Contains(r.str("message"), "session") {
			t.Errorf("%s with an svc_ token: %d %s", tc.name, r.status, r.raw)
		}
	}
	// Nothing changed.
	g := e.must(e.call("GET", "/api/v1/auth/tokens/"+selfID, nil, access), 200).data()
	if g["alias"] != "pinned" || g["expires_at"] == nil || len(g["ip_whitelist"].([]any)) != 1 || g["is_enabled"] != true {
		t.Fatalf("token changed: %v", g)
	}
	if o := e.must(e.call("GET", "/api/v1/auth/tokens/"+otherID, nil, access), 200).data(); o["is_enabled"] != false || o["expires_at"] == nil {
		t.Fatalf("other token changed: %v", o)
	}
	// A token may rename itself (alias grants nothing).
	r := e.must(e.call("PATCH", "/api/v1/auth/tokens/"+selfID, map[string]any{"alias": "renamed by itself"}, self), 200)
	if r.data()["alias"] != "renamed by itself" {
		t.Fatalf("%s", r.raw)
	}
	// The session may change everything.
	e.must(e.call("PATCH", "/api/v1/auth/tokens/"+otherID, map[string]any{"is_enabled": true, "expires_at": nil}, access), 200)
}

// The 2FA token gate guards PATCH of the security fields as it
// guards create.
func TestAuthTokenPatchHonoursTokenGate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("gate@example.com")["token"].(string)
	id := e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "ci", "ip_whitelist": []string{"10.0.0.1"}}, access), 201).str("data", "id")
	secret, _ := e.enable2FA(access)
	e.must(e.call("PUT", "/api/v1/users/auth/2fa/token-gate", map[string]any{"enabled": true}, access), 200)

	for _, body := range []map[string]any{{"ip_whitelist": nil}, {"expires_at": "tomorrow"}, {"is_enabled": false}} {
		r := e.call("PATCH", "/api/v1/auth/tokens/"+id, body, access)
		if r.status != 403 || !strings.Contains(r.str("message"), "X-2FA-Code") {
			t.Errorf("%v without a code: %d %s", body, r.status, r.raw)
		}
		e.must(e.call("PATCH", "/api/v1/auth/tokens/"+id, body, access, "X-2FA-Code", "000000"), 403)
	}
	if g := e.must(e.call("GET", "/api/v1/auth/tokens/"+id, nil, access), 200).data(); len(g["ip_whitelist"].([]any)) != 1 || g["expires_at"] != nil || g["is_enabled"] != true {
		t.Fatalf("gated PATCH changed the token: %v", g)
	}
	// An unknown id is 404 without spending a code.
	e.must(e.call("PATCH", "/api/v1/auth/tokens/00000000-0000-4000-8000-000000000000", map[string]any{"is_enabled": false}, access), 404)
	// Renaming needs no code; a current code unlocks the rest.
	e.must(e.call("PATCH", "/api/v1/auth/tokens/"+id, map[string]any{"alias": "ci two"}, access), 200)
	e.clock.Advance(30 * time.Second)
	r := e.must(e.call("PATCH", "/api/v1/auth/tokens/"+id, map[string]any{"ip_whitelist": nil}, access, "X-2FA-Code", e.oathtool(secret)), 200)
	if len(r.data()["ip_whitelist"].([]any)) != 0 {
		t.Fatalf("%s", r.raw)
	}
}
