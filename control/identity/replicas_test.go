package identity_test

import (
	"testing"

	"deckhand/control/identity"
)

// Two services on one store stand for two replicas: each caches verified
// credentials, and a logout or a disabled token on one is refused by the
// other on its next request (store notifications drop the other's cache).
func TestCredentialCacheFollowsTheOtherReplica(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	shared := a.db
	if a.another != nil {
		shared = a.another()
	}
	b := newEnv(t, func(d *identity.Deps) { d.DB, d.Sealer = shared, a.sealer })

	login := a.account("two@example.com")
	access := login["token"].(string)
	b.must(b.call("GET", "/api/v1/users/auth/me", nil, access), 200)
	b.must(b.call("GET", "/api/v1/users/auth/me", nil, access), 200) // from B's cache
	a.must(a.call("POST", "/api/v1/users/auth/logout", nil, access), 200)
	b.must(b.call("GET", "/api/v1/users/auth/me", nil, access), 401)

	access = a.login("two@example.com", goodPassword)["token"].(string)
	tok := b.must(b.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "ci"}, access), 201).data()
	svc, id := tok["token"].(string), tok["id"].(string)
	a.must(a.call("GET", "/api/v1/users/auth/me", nil, svc), 200)
	b.must(b.call("PATCH", "/api/v1/auth/tokens/"+id, map[string]any{"is_enabled": false}, access), 200)
	a.must(a.call("GET", "/api/v1/users/auth/me", nil, svc), 401)
}

// Hellos and acknowledgements on the cache channel change no record: they
// must not drop the credential cache (a replica's own hello, once a second,
// did), except the echo of its first hello. A write notification and an
// unknown message must.
func TestCacheChannelMessagesThatDropTheCache(t *testing.T) {
	t.Parallel()
	s := newEnv(t).svc
	// The echo of the first hello may still be on its way: take it now.
	identity.CacheVersionAfter(s, func(self string) string { return "h " + self })
	for _, c := range []struct {
		name    string
		payload func(self string) string
		drops   bool
	}{
		{"own hello", func(self string) string { return "h " + self }, false},
		{"other's hello", func(string) string { return "h otherreplica" }, false},
		{"acknowledgement", func(string) string { return "a someid otherreplica" }, false},
		{"other's write", func(string) string { return "w otherreplica someid" }, true},
		{"unknown", func(string) string { return "x y" }, true},
	} {
		if got := identity.CacheVersionAfter(s, c.payload) != 0; got != c.drops {
			t.Errorf("%s: cache dropped = %v, want %v", c.name, got, c.drops)
		}
	}
}
