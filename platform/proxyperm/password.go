package proxyperm

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"sync"

	"deckhand/platform/secrets"
)

// An argon2id check costs tens of milliseconds and 19 MiB: run for every
// request carrying Basic credentials it would make the gateway slow and
// easy to exhaust. A credential that verified once is remembered by a MAC
// of (stored hash, password) under a key drawn at process start, so the
// memory holds neither the password nor anything that tests a guess
// offline; a changed hash misses the cache by construction. Failures are
// not remembered: each wrong password costs one bounded check
// (platform/secrets limits concurrent runs).
const maxVerified = 4096

type verifiedCache struct {
	mu   sync.Mutex
	key  [32]byte
	seen map[[32]byte]struct{}
}

var verified = func() *verifiedCache {
	c := &verifiedCache{seen: map[[32]byte]struct{}{}}
	if _, err := rand.Read(c.key[:]); err != nil {
		panic("proxyperm: crypto/rand failed: " + err.Error())
	}
	return c
}()

func (c *verifiedCache) mac(hash, pw string) [32]byte {
	m := hmac.New(sha256.New, c.key[:])
	m.Write([]byte(hash))
	m.Write([]byte{0})
	m.Write([]byte(pw))
	var out [32]byte
	copy(out[:], m.Sum(nil))
	return out
}

// argonPassword is a compiled argon2id password group.
type argonPassword struct {
	encoded string
	hash    secrets.PasswordHash
}

// check reports (1 or 0, for subtle's arithmetic) whether pw matches.
func (a *argonPassword) check(pw string) int {
	k := verified.mac(a.encoded, pw)
	verified.mu.Lock()
	_, ok := verified.seen[k]
	verified.mu.Unlock()
	if ok {
		return 1
	}
	if !a.hash.Check(pw) {
		return 0
	}
	verified.mu.Lock()
	if len(verified.seen) >= maxVerified {
		for old := range verified.seen { // map order: an arbitrary victim
			delete(verified.seen, old)
			break
		}
	}
	verified.seen[k] = struct{}{}
	verified.mu.Unlock()
	return 1
}

// checkPassword is a password group's verdict on Basic credentials u, pw:
// user and password compared in constant time. The argon2id check runs
// only for the group's user name, so a request for another user costs no
// KDF run (the user name is not a secret the timing protects).
func (g *CompiledGroup) checkPassword(u, pw string) bool {
	userOK := subtle.ConstantTimeCompare([]byte(u), []byte(g.Username))
	if g.argon != nil {
		return userOK == 1 && g.argon.check(pw) == 1
	}
	sum := sha256.Sum256([]byte(g.Salt + pw))
	passOK := subtle.ConstantTimeCompare(sum[:], g.Hash)
	return userOK&passOK == 1
}
