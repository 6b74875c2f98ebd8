// Package signing owns deckhand's ED25519 signatures: the control plane's key
// set on disk (one file per key, rotation, one active key), the signer that
// puts X-Service-Signature on every control-plane response, the verifier that
// clients and the agent use (replay window, key cache that re-fetches on an
// unknown kid, path binding, envelope status), the binding of an answer to
// the request that asked for it (binding.go), and signed identity and
// container claims.
//
// Wire formats (docs/spec/interface.md, Authentication 6):
//
//	X-Service-Signature: t=<unix_ts>,kid=<key_id>,path=<url_path>,sig=<128 hex>
//	signed data:         <t>.<response body bytes>
//	claim:               {"payload_b64": base64url(JSON), "signature_hex": hex(sig over payload_b64)}
//
// and, only for a request that sent X-Service-Nonce (an extension):
//
//	X-Service-Binding:   t=<unix_ts>,kid=<key_id>,status=<status>,sig=<128 hex>
//	signed data:         deckhand-binding-v1 \n t \n status \n method \n path \n ETag \n nonce \n hex(sha256(body))
package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"sync"
	"time"

	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// Key is one signing key. The private half never leaves the process except
// into its own 0600 file, sealed under the master key.
type Key struct {
	ID        string
	Public    ed25519.PublicKey
	private   ed25519.PrivateKey
	CreatedAt time.Time
}

// keyFile is the on-disk form of a key: <dir>/<kid>.json, mode 0600. The
// seed is sealed under the master key (platform/secrets, purpose
// "signing/seed <kid>"), so a copy of the directory signs nothing. Files
// written before hold seed_b64 in the clear; loading re-writes them sealed.
type keyFile struct {
	KID        string    `json:"kid"`
	Algorithm  string    `json:"algorithm"`
	SeedSealed string    `json:"seed_sealed,omitempty"`
	Seed       string    `json:"seed_b64,omitempty"` // legacy, plaintext
	CreatedAt  time.Time `json:"created_at"`
}

func seedPurpose(kid string) string { return "signing/seed " + kid }

// KeySet is the control plane's signing keys: every key ever made (so
// signatures by rotated-out keys still verify) and the one that signs now.
type KeySet struct {
	db     *store.DB // set by OpenDB: the keys live in the database, not in dir
	dir    string
	sealer *secrets.Sealer
	mu     sync.RWMutex
	keys   []Key // creation order
	active Key
}

// Dir is where the keys live: a directory, or the database's location.
func (ks *KeySet) Dir() string { return ks.dir }

// KIDFor derives a key id from the public key, so ids never collide and the
// same key always has the same id.
func KIDFor(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "ed25519-" + hex.EncodeToString(sum[:8])
}

// Active is the key that signs now.
func (ks *KeySet) Active() Key {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return ks.active
}

// Keys lists every key, oldest first.
func (ks *KeySet) Keys() []Key {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return append([]Key(nil), ks.keys...)
}

// Lookup finds a key's public half by kid.
func (ks *KeySet) Lookup(kid string) (ed25519.PublicKey, bool) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	for _, k := range ks.keys {
		if k.ID == kid {
			return k.Public, true
		}
	}
	return nil, false
}

// Sign signs msg with the active key and reports that key's id.
func (ks *KeySet) Sign(msg []byte) (kid string, sig []byte) {
	k := ks.Active()
	return k.ID, ed25519.Sign(k.private, msg)
}

// PublicSet is the public-key document (docs/spec/interface.md "Signing key set").
func (ks *KeySet) PublicSet() PublicKeySet {
	set := PublicKeySet{ActiveKID: ks.Active().ID, Usage: Usage, SigningFormat: Format}
	for _, k := range ks.Keys() {
		set.Keys = append(set.Keys, PublicKeyOf(k.ID, k.Public))
	}
	return set
}

func sortKeys(keys []Key) {
	sort.SliceStable(keys, func(i, j int) bool {
		if !keys[i].CreatedAt.Equal(keys[j].CreatedAt) {
			return keys[i].CreatedAt.Before(keys[j].CreatedAt)
		}
		return keys[i].ID < keys[j].ID
	})
}
