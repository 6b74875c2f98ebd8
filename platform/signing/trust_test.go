package signing_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/signing"
)

var trustNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// fixedKey is a deterministic key (fuzzing needs the same keys every run).
func fixedKey(name string) (string, ed25519.PrivateKey) {
	seed := sha256.Sum256([]byte("deckhand trust test " + name))
	priv := ed25519.NewKeyFromSeed(seed[:])
	return signing.KIDFor(priv.Public().(ed25519.PublicKey)), priv
}

type signer struct {
	kid  string
	priv ed25519.PrivateKey
}

func key(name string) signer {
	kid, priv := fixedKey(name)
	return signer{kid, priv}
}

func (s signer) pub() ed25519.PublicKey { return s.priv.Public().(ed25519.PublicKey) }

// answer is a key-set answer listing keys (the last active), signed by
// each of by at t, for path.
func answer(t int64, path string, keys []signer, by ...signer) signing.FetchedKeySet {
	set := signing.PublicKeySet{Usage: signing.Usage, SigningFormat: signing.Format}
	for _, k := range keys {
		set.Keys = append(set.Keys, signing.PublicKeyOf(k.kid, k.pub()))
	}
	if len(keys) > 0 {
		set.ActiveKID = keys[len(keys)-1].kid
	}
	body, _ := json.Marshal(platform.Envelope{StatusCode: 200, Message: "Signing key set", Data: set})
	f := signing.FetchedKeySet{Body: body}
	for _, b := range by {
		f.Signatures = append(f.Signatures, signing.FormatHeader(t, b.kid, path, ed25519.Sign(b.priv, signing.SignedData(t, body))))
	}
	return f
}

func trustOf(ss ...signer) map[string]ed25519.PublicKey {
	m := map[string]ed25519.PublicKey{}
	for _, s := range ss {
		m[s.kid] = s.pub()
	}
	return m
}

// A set is accepted only when a key already trusted signed it (for the
// key-set path, within the replay window); a set signed only by the keys
// it brings, one that rebinds a trusted kid, or a signature over other
// bytes is refused.
func TestAcceptKeySet(t *testing.T) {
	t.Parallel()
	k1, k2, evil := key("k1"), key("k2"), key("evil")
	now := trustNow.Unix()
	rebound := signer{k1.kid, evil.priv} // a forged key under the trusted kid
	altered := answer(now, signing.PublicKeyPath, []signer{k1, k2}, k1)
	altered.Body = bytes.Replace(altered.Body, []byte(`"active_kid"`), []byte(`"active_kid" `), 1)
	for _, c := range []struct {
		name    string
		trusted map[string]ed25519.PublicKey
		f       signing.FetchedKeySet
		want    error
	}{
		{"rotation endorsed by the old key", trustOf(k1), answer(now, signing.PublicKeyPath, []signer{k1, k2}, k2, k1), nil},
		{"rotation, the old key dropped from the set", trustOf(k1), answer(now, signing.PublicKeyPath, []signer{k2}, k2, k1), nil},
		{"same set again", trustOf(k1, k2), answer(now, signing.PublicKeyPath, []signer{k1, k2}, k2), nil},
		{"signed only by the new key", trustOf(k1), answer(now, signing.PublicKeyPath, []signer{k1, k2}, k2), signing.ErrKeySetUnendorsed},
		{"forged set, self-signed", trustOf(k1), answer(now, signing.PublicKeyPath, []signer{k1, evil}, evil), signing.ErrKeySetUnendorsed},
		{"forged key under a trusted kid", trustOf(k1), answer(now, signing.PublicKeyPath, []signer{rebound}, rebound), signing.ErrKeySetRebinds},
		{"trusted signature over other bytes", trustOf(k1), altered, signing.ErrKeySetUnendorsed},
		{"signed for another path", trustOf(k1), answer(now, "/api/v1/other", []signer{k1, k2}, k1), signing.ErrKeySetUnendorsed},
		{"signature too old", trustOf(k1), answer(now-301, signing.PublicKeyPath, []signer{k1, k2}, k1), signing.ErrKeySetUnendorsed},
		{"signature from the future", trustOf(k1), answer(now+301, signing.PublicKeyPath, []signer{k1, k2}, k1), signing.ErrKeySetUnendorsed},
		{"no signature", trustOf(k1), answer(now, signing.PublicKeyPath, []signer{k1, k2}), signing.ErrKeySetUnendorsed},
		{"nothing trusted", nil, answer(now, signing.PublicKeyPath, []signer{k1}, k1), signing.ErrKeySetUnendorsed},
		{"no keys", trustOf(k1), answer(now, signing.PublicKeyPath, nil, k1), signing.ErrKeySetMalformed},
		{"a kid twice", trustOf(k1), answer(now, signing.PublicKeyPath, []signer{k1, k1}, k1), signing.ErrKeySetMalformed},
		{"not JSON", trustOf(k1), signing.FetchedKeySet{Body: []byte("<html>"), Signatures: []string{"x"}}, signing.ErrKeySetMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := signing.AcceptKeySet(c.trusted, c.f, trustNow, 300*time.Second)
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if c.want == nil && len(got) == 0 {
				t.Fatal("accepted set has no keys")
			}
			if c.want != nil && got != nil {
				t.Fatal("a refused set returned keys")
			}
		})
	}
	// The first set stands on its own signature only.
	if keys, err := signing.FirstKeySet(answer(now, signing.PublicKeyPath, []signer{k1}, k1), trustNow, 300*time.Second); err != nil || len(keys) != 1 {
		t.Fatalf("first set: %v %v", keys, err)
	}
	if _, err := signing.FirstKeySet(answer(now, signing.PublicKeyPath, []signer{k1}, evil), trustNow, 300*time.Second); !errors.Is(err, signing.ErrKeySetUnendorsed) {
		t.Fatalf("first set signed by a key not in it: %v", err)
	}
}

// The control plane's key-set answer, endorsed by every key, is accepted
// by a verifier that knew only the oldest key.
func TestEndorseAfterRotations(t *testing.T) {
	t.Parallel()
	ks, err := signing.Open(t.TempDir(), newSealer(t))
	if err != nil {
		t.Fatal(err)
	}
	first := ks.Active()
	for range 3 {
		if _, err := ks.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	body, _ := json.Marshal(platform.Envelope{StatusCode: 200, Message: "Signing key set", Data: ks.PublicSet()})
	sigs := ks.Endorse(trustNow.Unix(), signing.PublicKeyPath, body)
	if len(sigs) != 4 {
		t.Fatalf("%d endorsements for 4 keys", len(sigs))
	}
	keys, err := signing.AcceptKeySet(map[string]ed25519.PublicKey{first.ID: first.Public}, signing.FetchedKeySet{Body: body, Signatures: sigs},
		trustNow, 300*time.Second)
	if err != nil || len(keys) != 4 || !keys[ks.Active().ID].Equal(ks.Active().Public) {
		t.Fatalf("accepted %v, %v", keys, err)
	}
}

// A pinning verifier takes a new kid from an endorsed set, refuses a
// forged one (keeping its keys and telling OnAccept nothing), and holds
// its pinned key whatever a set says.
func TestPinningVerifier(t *testing.T) {
	t.Parallel()
	k1, k2, evil := key("k1"), key("k2"), key("evil")
	clock := clockpkg.NewFakeClock(trustNow)
	serve := answer(trustNow.Unix(), signing.PublicKeyPath, []signer{k1}, k1)
	var accepted []map[string]ed25519.PublicKey
	v := signing.NewVerifier(signing.VerifierOptions{Clock: clock, MinRefetch: time.Second,
		Fetch:    func(context.Context) (signing.FetchedKeySet, error) { return serve, nil },
		Pinned:   trustOf(k1),
		OnAccept: func(k map[string]ed25519.PublicKey) { accepted = append(accepted, k) }})
	sign := func(s signer, body string) string {
		return signing.FormatHeader(clock.Now().Unix(), s.kid, "/p", ed25519.Sign(s.priv, signing.SignedData(clock.Now().Unix(), []byte(body))))
	}
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(k1, "a"), "/p", []byte("a")); err != nil {
		t.Fatal(err)
	}
	// A forged set announcing the forger's kid: refused, nothing kept.
	serve = answer(trustNow.Unix(), signing.PublicKeyPath, []signer{k1, evil}, evil)
	clock.Advance(2 * time.Second)
	if _, err := v.Verify(ctx, sign(evil, "b"), "/p", []byte("b")); !errors.Is(err, signing.ErrKeySetUnendorsed) {
		t.Fatalf("forged kid: %v", err)
	}
	if _, ok := v.Keys()[evil.kid]; ok || len(accepted) != 1 {
		t.Fatalf("the forged key is trusted (%d accepted sets)", len(accepted))
	}
	// A legitimate rotation: k1 endorses the set with k2.
	serve = answer(clock.Now().Add(2*time.Second).Unix(), signing.PublicKeyPath, []signer{k1, k2}, k2, k1)
	clock.Advance(2 * time.Second)
	if _, err := v.Verify(ctx, sign(k2, "c"), "/p", []byte("c")); err != nil {
		t.Fatalf("rotated kid: %v", err)
	}
	if got := accepted[len(accepted)-1]; len(got) != 2 || !maps.EqualFunc(got, trustOf(k1, k2), func(a, b ed25519.PublicKey) bool { return a.Equal(b) }) {
		t.Fatalf("accepted %v", got)
	}
	// Without a pin or a first-use allowance nothing is trusted.
	bare := signing.NewVerifier(signing.VerifierOptions{Clock: clock,
		Fetch: func(context.Context) (signing.FetchedKeySet, error) { return serve, nil }})
	if _, err := bare.Verify(ctx, sign(k2, "d"), "/p", []byte("d")); err == nil || !strings.Contains(err.Error(), "no key is pinned") {
		t.Fatalf("unanchored verifier: %v", err)
	}
}

// With pins, only a pinned key endorses: a set signed by a key accepted
// since (k2, endorsed by the pin) but not by the pin is refused, though
// the same set is accepted by a verifier without pins that trusts k2.
func TestPinsAloneEndorse(t *testing.T) {
	t.Parallel()
	k1, k2, k3 := key("k1"), key("k2"), key("k3")
	clock := clockpkg.NewFakeClock(trustNow)
	serve := answer(trustNow.Unix(), signing.PublicKeyPath, []signer{k1, k2, k3}, k2, k3)
	fetch := func(context.Context) (signing.FetchedKeySet, error) { return serve, nil }
	sign := func(s signer, body string) string {
		return signing.FormatHeader(clock.Now().Unix(), s.kid, "/p", ed25519.Sign(s.priv, signing.SignedData(clock.Now().Unix(), []byte(body))))
	}
	ctx := context.Background()
	pinned := signing.NewVerifier(signing.VerifierOptions{Clock: clock, Fetch: fetch, Pinned: trustOf(k1), Trusted: trustOf(k2)})
	if _, err := pinned.Verify(ctx, sign(k3, "a"), "/p", []byte("a")); !errors.Is(err, signing.ErrKeySetUnendorsed) {
		t.Fatalf("pinned: a set only k2 and k3 signed: %v", err)
	}
	unpinned := signing.NewVerifier(signing.VerifierOptions{Clock: clock, Fetch: fetch, Trusted: trustOf(k2)})
	if _, err := unpinned.Verify(ctx, sign(k3, "a"), "/p", []byte("a")); err != nil {
		t.Fatalf("unpinned, trusting k2: %v", err)
	}
	if got := signing.PinnedOnly(trustOf(k1, k2), trustOf(k1)); len(got) != 1 || got[k1.kid] == nil {
		t.Fatalf("PinnedOnly: %v", got)
	}
	if got := signing.PinnedOnly(trustOf(signer{k1.kid, k2.priv}), trustOf(k1)); len(got) != 0 {
		t.Fatalf("PinnedOnly kept a pinned kid with another key: %v", got)
	}
}

// FuzzAcceptKeySet: whatever the body and signature headers, AcceptKeySet
// never panics, and a set it accepts (a) carries a signature that verifies
// under the trusted key of its kid over exactly the body, for the key-set
// path, within the window, and (b) maps no trusted kid to another key.
// The seeds (run by every go test) are a real rotation, forgeries and
// malformed answers.
func FuzzAcceptKeySet(f *testing.F) {
	k1, k2, evil := key("k1"), key("k2"), key("evil")
	now := trustNow.Unix()
	add := func(a signing.FetchedKeySet) { f.Add(a.Body, strings.Join(a.Signatures, "\n")) }
	add(answer(now, signing.PublicKeyPath, []signer{k1, k2}, k2, k1))
	add(answer(now, signing.PublicKeyPath, []signer{k1, k2}, k2))
	add(answer(now, signing.PublicKeyPath, []signer{k1, evil}, evil))
	add(answer(now, signing.PublicKeyPath, []signer{{k1.kid, evil.priv}}, signer{k1.kid, evil.priv}))
	add(answer(now-1000, signing.PublicKeyPath, []signer{k1, k2}, k1))
	add(answer(now, "/x", []signer{k1}, k1))
	f.Add([]byte(`{"data":{"keys":[],"active_kid":""}}`), "t=1,kid=a,path=/,sig=00")
	f.Add([]byte(`null`), "")
	trusted := trustOf(k1)
	f.Fuzz(func(t *testing.T, body []byte, sigs string) {
		fs := signing.FetchedKeySet{Body: body, Signatures: strings.Split(sigs, "\n")}
		keys, err := signing.AcceptKeySet(trusted, fs, trustNow, 300*time.Second)
		if err != nil {
			if keys != nil {
				t.Fatal("refused with keys")
			}
			return
		}
		if pub, ok := keys[k1.kid]; ok && !pub.Equal(k1.pub()) {
			t.Fatal("accepted a set rebinding the trusted kid")
		}
		endorsed := false
		for _, h := range fs.Signatures {
			s, err := signing.ParseHeader(h)
			if err != nil || s.KID != k1.kid || s.Path != signing.PublicKeyPath {
				continue
			}
			if d := trustNow.Unix() - s.T; d > 300 || d < -300 {
				continue
			}
			if ed25519.Verify(k1.pub(), signing.SignedData(s.T, body), s.Sig) {
				endorsed = true
			}
		}
		if !endorsed {
			t.Fatalf("accepted a set no trusted key signed: %q / %q", body, sigs)
		}
	})
}
