package deckhand

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// keyServer publishes a key set, signed like the control plane signs it,
// and counts how often it is fetched.
type keyServer struct {
	mu      sync.Mutex
	keys    map[string]ed25519.PrivateKey
	active  string
	now     func() time.Time
	fetches int
	tamper  bool
}

func (k *keyServer) add(kid string) ed25519.PrivateKey {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys[kid], k.active = priv, kid
	return priv
}

func (k *keyServer) sign(kid, path string, body []byte) string {
	k.mu.Lock()
	priv := k.keys[kid]
	k.mu.Unlock()
	t := k.now().Unix()
	sig := ed25519.Sign(priv, append([]byte(strconv.FormatInt(t, 10)+"."), body...))
	return "t=" + strconv.FormatInt(t, 10) + ",kid=" + kid + ",path=" + path + ",sig=" + hex.EncodeToString(sig)
}

func (k *keyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.fetches++
	type key struct {
		KID string `json:"kid"`
		Alg string `json:"algorithm"`
		Hex string `json:"public_key_hex"`
	}
	var set []key
	for kid, priv := range k.keys {
		set = append(set, key{kid, "ed25519", hex.EncodeToString(priv.Public().(ed25519.PublicKey))})
	}
	active, tamper := k.active, k.tamper
	k.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"data": map[string]any{"keys": set, "active_kid": active}})
	w.Header().Set(SignatureHeader, k.sign(active, r.URL.Path, body))
	if tamper {
		body = []byte(strings.Replace(string(body), `"active_kid":"`, `"active_kid":"x`, 1))
	}
	_, _ = w.Write(body)
}

func (k *keyServer) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetches
}

func TestVerifierCachesTheKeySetAndRefetchesOnlyWhenItMust(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { return clock }
	ks := &keyServer{keys: map[string]ed25519.PrivateKey{}, now: now}
	ks.add("k1")
	srv := httptest.NewServer(ks)
	defer srv.Close()
	v := &verifier{base: srv.URL, hc: srv.Client(), now: now}
	ctx := context.Background()
	ok := func(kid string) {
		t.Helper()
		body := []byte(`{"data":1}`)
		if err := v.verify(ctx, ks.sign(kid, "/x", body), "/x", body); err != nil {
			t.Fatalf("kid %s at %v: %v", kid, clock, err)
		}
	}

	ok("k1")
	ok("k1")
	if ks.count() != 1 {
		t.Fatalf("%d fetches for two answers, want 1", ks.count())
	}
	clock = clock.Add(KeyCacheTTL - time.Second)
	ok("k1")
	if ks.count() != 1 {
		t.Fatalf("fetched again within %v", KeyCacheTTL)
	}
	clock = clock.Add(2 * time.Second)
	ok("k1")
	if ks.count() != 2 {
		t.Fatalf("not fetched again after %v: %d", KeyCacheTTL, ks.count())
	}

	// A rotation: the first answer with the new kid fetches at once.
	ks.add("k2")
	ok("k2")
	if ks.count() != 3 {
		t.Fatalf("an unknown kid did not fetch the set: %d", ks.count())
	}

	// A forged kid fetches once, then not again within minRefetch.
	clock = clock.Add(minRefetch + time.Second)
	body := []byte(`{}`)
	forged := ks.sign("k2", "/x", body)
	forged = "t=" + strconv.FormatInt(clock.Unix(), 10) + ",kid=nope" + forged[len("t=")+len(strconv.FormatInt(clock.Unix(), 10))+len(",kid=k2"):]
	for range 3 {
		if err := v.verify(ctx, forged, "/x", body); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("forged kid: %v", err)
		}
	}
	if ks.count() != 4 {
		t.Fatalf("three forged kids made %d fetches, want 1", ks.count()-3)
	}
	clock = clock.Add(minRefetch + time.Second)
	_ = v.verify(ctx, forged, "/x", body)
	if ks.count() != 5 {
		t.Fatalf("no fetch after %v: %d", minRefetch, ks.count())
	}
}

func TestVerifierRefusesWhatDoesNotHold(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { return clock }
	ks := &keyServer{keys: map[string]ed25519.PrivateKey{}, now: now}
	ks.add("k1")
	srv := httptest.NewServer(ks)
	defer srv.Close()
	ctx := context.Background()
	body := []byte(`{"data":1}`)
	good := ks.sign("k1", "/x", body)
	for _, c := range []struct {
		name         string
		header, path string
		body         []byte
		want         error
	}{
		{"no header", "", "/x", body, ErrSignatureMissing},
		{"garbage", "sig=1", "/x", body, ErrSignatureMalformed},
		{"another path", good, "/y", body, ErrPathMismatch},
		{"another body", good, "/x", []byte(`{"data":2}`), ErrBadSignature},
	} {
		v := &verifier{base: srv.URL, hc: srv.Client(), now: now}
		if err := v.verify(ctx, c.header, c.path, c.body); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	for _, skew := range []time.Duration{-ReplayTolerance - time.Second, ReplayTolerance + time.Second} {
		v := &verifier{base: srv.URL, hc: srv.Client(), now: func() time.Time { return clock.Add(skew) }}
		if err := v.verify(ctx, good, "/x", body); !errors.Is(err, ErrReplayWindow) {
			t.Errorf("clock %v off: %v", skew, err)
		}
	}
	// A key set altered on the way is refused like any answer.
	ks.tamper = true
	v := &verifier{base: srv.URL, hc: srv.Client(), now: now}
	if err := v.verify(ctx, good, "/x", body); !errors.Is(err, ErrBadSignature) {
		t.Errorf("tampered key set: %v", err)
	}
}
