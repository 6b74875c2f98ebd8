package identity_test

import (
	"strconv"
	"testing"
	"time"

	"deckhand/control/identity"
)

func limitedEnv(t *testing.T, l identity.Limits) *env {
	return newEnv(t, func(d *identity.Deps) { d.Limits = &l })
}

func want429(t *testing.T, r resp, what string) {
	t.Helper()
	if r.status != 429 || r.str("error") != "Too Many Requests" {
		t.Fatalf("%s: %d %s, want 429", what, r.status, r.raw)
	}
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("%s: Retry-After %q", what, r.header.Get("Retry-After"))
	}
}

func TestLoginLimitsPerAccountAndPerIP(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, identity.Limits{LoginPerIP: identity.Rule{N: 5, Per: 5 * time.Minute}, LoginPerAccount: identity.Rule{N: 3, Per: 15 * time.Minute}})
	e.account("victim@example.com") // 1 login
	bad := map[string]any{"email": "victim@example.com", "password": "Wrong-pass1"}
	for i := 0; i < 3; i++ {
		e.must(e.call("POST", "/api/v1/users/auth/login", bad, ""), 401)
	}
	// The account is throttled, even with the right password ...
	want429(t, e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "victim@example.com", "password": goodPassword}, ""), "account")
	// ... and the IP budget (5) runs out on the next attempt.
	want429(t, e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "x@example.com", "password": goodPassword}, ""), "ip")
	// Another address still gets through.
	r := e.callWith(clientFrom(t, "127.0.0.2"), "POST", "/api/v1/users/auth/login", map[string]any{"email": "nobody@example.com", "password": goodPassword}, "")
	e.must(r, 401)
	e.clock.Advance(16 * time.Minute)
	e.login("victim@example.com", goodPassword)
}

func TestSignupRefreshAndRecoveryLimits(t *testing.T) {
	t.Parallel()
	e := limitedEnv(t, identity.Limits{SignupPerIP: identity.Rule{N: 2, Per: 5 * time.Minute},
		RefreshPerIP: identity.Rule{N: 2, Per: 5 * time.Minute}, RecoveryPerAccount: identity.Rule{N: 2, Per: time.Hour},
		RecoveryPerIP: identity.Rule{N: 100, Per: time.Hour}})
	login := e.account("lim@example.com") // signup 1
	e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": "two@example.com", "password": goodPassword}, ""), 200)
	want429(t, e.call("POST", "/api/v1/auth/signup", map[string]any{"email": "three@example.com", "password": goodPassword}, ""), "signup")
	// Per address too: repeated signups cannot mail-bomb one address.
	e.clock.Advance(6 * time.Minute)
	e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": "two@example.com", "password": goodPassword}, ""), 200)
	want429(t, e.call("POST", "/api/v1/auth/signup", map[string]any{"email": "two@example.com", "password": goodPassword}, ""), "signup per address")

	rt := login["refreshToken"].(string)
	for i := 0; i < 2; i++ {
		rt = e.must(e.callRefresh(rt, rt), 200).str("data", "refreshToken")
	}
	want429(t, e.callRefresh(rt, rt), "refresh")
	// Per account: another address hits the account's budget.
	e2 := limitedEnv(t, identity.Limits{RefreshPerAccount: identity.Rule{N: 1, Per: 5 * time.Minute}})
	l2 := e2.account("acct@example.com")
	rt2 := e2.must(e2.callRefresh(l2["refreshToken"].(string), l2["refreshToken"].(string)), 200).str("data", "refreshToken")
	want429(t, e2.callWith(clientFrom(t, "127.0.0.2"), "POST", "/api/v1/users/auth/refresh", map[string]any{"refreshToken": rt2}, rt2), "refresh per account")

	for i := 0; i < 2; i++ {
		e.must(e.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": "lim@example.com"}, ""), 200)
	}
	want429(t, e.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": "lim@example.com"}, ""), "recovery")
	// Per address: another address is not affected, and unknown ones count the same way.
	e.must(e.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": "ghost@example.com"}, ""), 200)
	e.clock.Advance(time.Hour)
	e.must(e.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": "lim@example.com"}, ""), 200)
}
