package clie2e_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"deckhand/agent/cli"
	"deckhand/control/controltest"
	"deckhand/platform/signing"
)

// An answer altered on the way is refused: nothing of it is printed and
// the command fails saying why. A key set altered on the way stops login.
func TestTamperedAnswerRefused(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	email := "tamper@example.com"
	s.User(s.Admin(), email)
	p := newProxy(t, s.URL)
	u := newUser(t)

	p.alter(signing.PublicKeyPath, true)
	r := u.run(controltest.GoodPW+"\n", "login", p.URL(), "--email", email, "--password-stdin")
	if r.err == nil || !strings.Contains(r.stderr, "not signed by its own key") || r.stdout != "" {
		t.Fatalf("login through an altered key set: %s", r)
	}
	if _, err := os.Stat(u.configPath()); err == nil {
		t.Fatal("a refused login wrote the config")
	}
	p.alter(signing.PublicKeyPath, false)
	u.login(p.URL(), email, controltest.GoodPW)
	if me := u.jsonOf("whoami"); me["email"] != email {
		t.Fatalf("whoami: %v", me)
	}

	p.alter("/api/v1/users/auth/me", true)
	r = u.fails("refusing the control plane's answer to GET /api/v1/users/auth/me: signature: does not verify", "whoami", "-o", "json")
	if r.stdout != "" {
		t.Fatalf("a refused answer was printed: %s", r)
	}
	p.alter("/api/v1/users/auth/me", false)
	// An error answer is checked too before its message is shown.
	p.alter("/api/v1/auth/tokens/nope", true)
	u.fails("signature: does not verify", "tokens", "get", "nope")
}

// The key set is cached beside the config for 24 hours: commands after
// login fetch no keys. After a key rotation the first answer names an
// unknown kid, and the set is fetched again once.
func TestKeySetCachedAndRefetchedOnUnknownKid(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := controltest.StartIn(t, data)
	email := "keys@example.com"
	s.User(s.Admin(), email)
	p := newProxy(t, s.URL)
	u := newUser(t)
	u.login(p.URL(), email, controltest.GoodPW)
	cache := cli.KeyCachePath(u.configPath())
	if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key cache: %v %v", fi, err)
	}
	before := p.count(signing.PublicKeyPath)
	u.ok("", "whoami")
	u.ok("", "wallet", "balance")
	if n := p.count(signing.PublicKeyPath) - before; n != 0 {
		t.Fatalf("%d key fetches after login; the cache should answer", n)
	}

	// Rotate: stop, `keys rotate`, start again (elsewhere; the proxy
	// follows), so answers are signed by a kid the cache does not hold.
	s.Stop()
	if out, err := controltest.Out(append([]string{"keys", "rotate", "--data", data}, controltest.StoreFlags(t, data)...)...); err != nil {
		t.Fatalf("keys rotate: %v\n%s", err, out)
	}
	s2 := controltest.StartIn(t, data)
	p.setUpstream(t, s2.URL)
	before = p.count(signing.PublicKeyPath)
	if me := u.jsonOf("whoami"); me["email"] != email {
		t.Fatalf("whoami after rotation: %v", me)
	}
	if n := p.count(signing.PublicKeyPath) - before; n != 1 {
		t.Fatalf("%d key fetches after a rotation, want 1", n)
	}
	var cached map[string]struct {
		Set signing.PublicKeySet `json:"set"`
	}
	raw, _ := os.ReadFile(cache)
	if err := json.Unmarshal(raw, &cached); err != nil || len(cached[p.URL()].Set.Keys) != 2 {
		t.Fatalf("key cache after rotation: %s", raw)
	}
	before = p.count(signing.PublicKeyPath)
	u.ok("", "whoami")
	if n := p.count(signing.PublicKeyPath) - before; n != 0 {
		t.Fatalf("%d key fetches once the new set is cached", n)
	}
}
