package signing_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"sync"
	"testing"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/signing"
)

// A signature served from the memo is the one signing would make: it
// verifies, it is bound to its own second, body and key, and a changed
// second, body or active key never reuses an old one.
func TestSignMemoNeverChangesOutput(t *testing.T) {
	t.Parallel()
	ks := newKeys(t)
	clock := clockpkg.NewFakeClock(time.Unix(1_800_000_000, 0))
	signer := signing.NewSigner(ks, clock)
	src := &countingSource{}
	src.publish(ks)
	v := signing.NewVerifier(signing.VerifierOptions{Source: src.fetch, Clock: clock})
	ctx := context.Background()

	check := func(name, path string, body []byte) signing.Signature {
		t.Helper()
		h := signer.Sign(path, body)
		s, err := v.Verify(ctx, h, path, body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pub, _ := ks.Lookup(s.KID)
		if !ed25519.Verify(pub, signing.SignedData(clock.Now().Unix(), body), s.Sig) || s.T != clock.Now().Unix() {
			t.Fatalf("%s: signature not over the current second and body", name)
		}
		return s
	}
	a := []byte(`{"id":"u1","email":"a@example.com"}`)
	b := []byte(`{"id":"u2","email":"b@example.com"}`)
	first := check("first", "/api/v1/users/auth/me", a)
	again := check("repeat", "/api/v1/users/auth/me", a)
	other := check("other path", "/api/v1/other", a)
	if string(again.Sig) != string(first.Sig) || string(other.Sig) != string(first.Sig) {
		t.Fatal("same second, key and body gave another signature (Ed25519 is deterministic)")
	}
	if s := check("other body", "/api/v1/users/auth/me", b); string(s.Sig) == string(first.Sig) {
		t.Fatal("another body reused a signature")
	}
	clock.Advance(time.Second)
	if s := check("next second", "/api/v1/users/auth/me", a); string(s.Sig) == string(first.Sig) || s.T == first.T {
		t.Fatal("the next second reused the previous second's signature")
	}
	if _, err := ks.Rotate(); err != nil {
		t.Fatal(err)
	}
	src.publish(ks)
	if s := check("rotated", "/api/v1/users/auth/me", a); s.KID == first.KID {
		t.Fatal("after a rotation the old key still signs")
	}
}

// Signers racing over a few repeated bodies and many distinct ones all get
// valid signatures (run with -race).
func TestSignMemoConcurrent(t *testing.T) {
	t.Parallel()
	ks := newKeys(t)
	signer := signing.NewSigner(ks, nil)
	v := signing.NewVerifier(signing.VerifierOptions{Source: signing.StaticKeySource(ks.PublicSet())})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				body := []byte(fmt.Sprintf(`{"n":%d}`, i%3))
				if i%2 == 0 {
					body = []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				}
				if _, err := v.Verify(context.Background(), signer.Sign("/p", body), "/p", body); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
