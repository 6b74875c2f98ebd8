package identity_test

import (
	"testing"
	"time"

	"deckhand/control/identity"
	"deckhand/platform/store"
)

func (e *env) count(bucket string) int {
	n := 0
	_ = e.db.View(func(tx *store.Tx) error { n = tx.Count(bucket); return nil })
	return n
}

func TestJanitorSweepsDeadRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	live := e.account("jan@example.com")
	dead := e.login("jan@example.com", goodPassword)
	e.must(e.call("POST", "/api/v1/users/auth/logout", nil, dead["token"].(string)), 200)
	e.must(e.initiateTicketless(), 200)
	e.must(e.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": "jan@example.com"}, ""), 200)
	if e.count("identity_sessions") != 2 || e.count("identity_one_time") == 0 {
		t.Fatalf("before: sessions %d, one-time %d", e.count("identity_sessions"), e.count("identity_one_time"))
	}
	e.clock.Advance(25 * time.Hour)
	identity.Sweep(e.svc)
	if e.count("identity_sessions") != 1 || e.count("identity_one_time") != 0 {
		t.Fatalf("after a day: sessions %d, one-time %d", e.count("identity_sessions"), e.count("identity_one_time"))
	}
	rt := live["refreshToken"].(string)
	e.must(e.callRefresh(rt, rt), 200)
	e.clock.Advance(8 * 24 * time.Hour)
	identity.Sweep(e.svc)
	if e.count("identity_sessions") != 0 {
		t.Fatalf("expired session kept")
	}
}

// initiateTicketless issues an intent token (a one-time record).
func (e *env) initiateTicketless() resp {
	return e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "jan@example.com", "password": goodPassword,
		"response_mode": "intent", "code_challenge": rfcChallenge}, "")
}
