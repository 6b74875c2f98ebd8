package proxyperm

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
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
