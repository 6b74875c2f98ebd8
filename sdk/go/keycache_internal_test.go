package deckhand

import (
	"context"
	"crypto/ed25519"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// memKeyCache is a KeyCache in memory, as another process left it.
type memKeyCache struct {
	mu     sync.Mutex
	sets   map[string]KeySet
	at     map[string]time.Time
	stores int
}

func (m *memKeyCache) LoadKeys(base string) (KeySet, time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sets[base]
	return s, m.at[base], ok
}

func (m *memKeyCache) StoreKeys(base string, set KeySet, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sets[base], m.at[base] = set, at
	m.stores++
}

// A key set another process cached is used without a fetch while it is
// younger than KeyCacheTTL; a kid it lacks (a rotation) fetches at once
// and the new set is stored; a stale cached set is fetched again.
func TestVerifierUsesTheKeyCache(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { return clock }
	ks := &keyServer{keys: map[string]ed25519.PrivateKey{}, now: now}
	ks.add("k1")
	srv := httptest.NewServer(ks)
	defer srv.Close()
	cache := &memKeyCache{sets: map[string]KeySet{}, at: map[string]time.Time{}}
	ctx := context.Background()
	verify := func(v *verifier, kid string) {
		t.Helper()
		body := []byte(`{"data":1}`)
		if err := v.verify(ctx, ks.sign(kid, "/x", body), "/x", body); err != nil {
			t.Fatalf("kid %s: %v", kid, err)
		}
	}

	first := &verifier{base: srv.URL, hc: srv.Client(), now: now, cache: cache}
	verify(first, "k1")
	if ks.count() != 1 || cache.stores != 1 {
		t.Fatalf("first process: %d fetches, %d stores; want 1 and 1", ks.count(), cache.stores)
	}

	// A later process: the cached set answers.
	clock = clock.Add(time.Hour)
	second := &verifier{base: srv.URL, hc: srv.Client(), now: now, cache: cache}
	verify(second, "k1")
	if ks.count() != 1 {
		t.Fatalf("a cached set younger than %v was fetched again", KeyCacheTTL)
	}
	// A rotation: the new kid fetches once, and the cache holds both.
	ks.add("k2")
	verify(second, "k2")
	if ks.count() != 2 || len(cache.sets[srv.URL].Keys) != 2 {
		t.Fatalf("after a rotation: %d fetches, cached %+v", ks.count(), cache.sets[srv.URL])
	}

	// A process after the cached set went stale fetches.
	clock = clock.Add(KeyCacheTTL + time.Second)
	third := &verifier{base: srv.URL, hc: srv.Client(), now: now, cache: cache}
	verify(third, "k2")
	if ks.count() != 3 {
		t.Fatalf("a stale cached set was used: %d fetches", ks.count())
	}
}
