package signing_test

import (
	"context"
	"crypto/ed25519"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/platform/secrets"
	"deckhand/platform/signing"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// Two handles on one storage stand for two replicas: they agree on one
// first key even when they open together, a rotation on one is used by
// the other within a few seconds, and the database holds seeds only
// sealed under the master key.
func TestKeysInTheDatabaseAreSharedByReplicas(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			dbA, another := eng.Open(t)
			dbB := another()
			sealer := newSealer(t)
			var a, b *signing.KeySet
			var errA, errB error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); a, errA = signing.OpenDB(context.Background(), dbA, sealer) }()
			go func() { defer wg.Done(); b, errB = signing.OpenDB(context.Background(), dbB, sealer) }()
			wg.Wait()
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if len(a.Keys()) != 1 || a.Active().ID != b.Active().ID {
				t.Fatalf("replicas disagree on the first key: %v / %v", a.PublicSet(), b.PublicSet())
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go b.Watch(ctx, nil)
			time.Sleep(100 * time.Millisecond) // Watch subscribes
			k, err := a.Rotate()
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for b.Active().ID != k.ID {
				if time.Now().After(deadline) {
					t.Fatalf("replica B still signs with %s 5 s after rotation to %s", b.Active().ID, k.ID)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if n := len(b.Keys()); n != 2 {
				t.Fatalf("B publishes %d keys, want 2 (old keys stay)", n)
			}
			kid, sig := b.Sign([]byte("msg"))
			if kid != k.ID || !verifyWith(a, kid, []byte("msg"), sig) {
				t.Fatal("a signature by B does not verify with A's key set")
			}
			// Sealed at rest: no seed in the clear.
			err = dbA.View(func(tx *store.Tx) error {
				return tx.ForEach("signing_keys", func(key string, raw []byte) error {
					if !strings.Contains(string(raw), "seed_sealed") || strings.Contains(string(raw), "seed_b64") {
						t.Errorf("key %s is not sealed: %s", key, raw)
					}
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			// Another master key opens nothing and changes nothing.
			other, _ := secrets.New(secrets.NewKey())
			if _, err := signing.OpenDB(context.Background(), dbB, other); err == nil || !strings.Contains(err.Error(), "master key") {
				t.Fatalf("wrong master key: %v", err)
			}
		})
	}
}

func verifyWith(ks *signing.KeySet, kid string, msg, sig []byte) bool {
	pub, ok := ks.Lookup(kid)
	return ok && len(sig) > 0 && ed25519.Verify(pub, msg, sig)
}
