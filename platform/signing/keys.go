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
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"deckhand/platform/atomicfile"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// Algorithm is the only signature algorithm deckhand uses.
const Algorithm = "ed25519"

// activeFile names the file holding the active kid inside the key directory.
const activeFile = "active"

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

// Open loads the key set in dir (created 0700), making the first key when
// the directory holds none. Seeds are sealed under sealer's master key; a
// plaintext key file of an older version is re-written sealed.
func Open(dir string, sealer *secrets.Sealer) (*KeySet, error) {
	if sealer == nil {
		return nil, errors.New("signing keys: a sealer (the master key) is required")
	}
	ks := &KeySet{dir: dir, sealer: sealer}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("signing keys: create %s: %w", dir, err)
	}
	// MkdirAll keeps the mode of an existing directory; tighten it so a key
	// directory made by hand cannot stay world-readable.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("signing keys: chmod %s: %w", dir, err)
	}
	if err := ks.Reload(); err != nil {
		return nil, err
	}
	if len(ks.keys) == 0 {
		if _, err := ks.Rotate(); err != nil {
			return nil, err
		}
	}
	return ks, nil
}

// Dir is where the keys live: a directory, or the database's location.
func (ks *KeySet) Dir() string { return ks.dir }

// Reload re-reads the directory (the server does this on SIGHUP so a
// `keys rotate` run next to it takes effect without a restart), or the
// database for a set from OpenDB.
func (ks *KeySet) Reload() error {
	if ks.db != nil {
		return ks.reloadDB()
	}
	entries, err := os.ReadDir(ks.dir)
	if err != nil {
		return fmt.Errorf("signing keys: read %s: %w", ks.dir, err)
	}
	var keys []Key
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		k, err := ks.readKey(filepath.Join(ks.dir, e.Name()))
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	sortKeys(keys)
	if len(keys) == 0 {
		ks.mu.Lock()
		ks.keys, ks.active = nil, Key{}
		ks.mu.Unlock()
		return nil
	}
	active := keys[len(keys)-1]
	if raw, err := os.ReadFile(filepath.Join(ks.dir, activeFile)); err == nil {
		want := strings.TrimSpace(string(raw))
		found := false
		for _, k := range keys {
			if k.ID == want {
				active, found = k, true
			}
		}
		if !found {
			return fmt.Errorf("signing keys: %s names kid %q but no such key file exists", filepath.Join(ks.dir, activeFile), want)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("signing keys: %w", err)
	}
	ks.mu.Lock()
	ks.keys, ks.active = keys, active
	ks.mu.Unlock()
	return nil
}

func (ks *KeySet) readKey(path string) (Key, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Key{}, fmt.Errorf("signing keys: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return Key{}, fmt.Errorf("signing keys: %s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("signing keys: %w", err)
	}
	var f keyFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return Key{}, fmt.Errorf("signing keys: %s: malformed key file: %v", path, err)
	}
	if f.Algorithm != Algorithm || f.KID == "" {
		return Key{}, fmt.Errorf("signing keys: %s: not an ed25519 key file", path)
	}
	var seed []byte
	legacy := f.SeedSealed == ""
	if legacy {
		seed, err = base64.StdEncoding.DecodeString(f.Seed)
	} else {
		seed, err = ks.sealer.Open(seedPurpose(f.KID), f.SeedSealed)
		if errors.Is(err, secrets.ErrWrongKey) {
			return Key{}, fmt.Errorf("signing keys: %s does not open under the master key (--master-key-file, key id %s): "+
				"start with the key file these keys were sealed with", path, ks.sealer.KeyID())
		}
	}
	if err != nil || len(seed) != ed25519.SeedSize {
		return Key{}, fmt.Errorf("signing keys: %s: not an ed25519 key file", path)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	k := Key{ID: f.KID, Public: priv.Public().(ed25519.PublicKey), private: priv, CreatedAt: f.CreatedAt}
	if legacy {
		// Migrate: the same key, its seed now sealed; the plaintext file is
		// replaced atomically.
		if err := ks.writeKey(k); err != nil {
			return Key{}, err
		}
	}
	return k, nil
}

// writeKey writes k's file with the seed sealed.
func (ks *KeySet) writeKey(k Key) error {
	sealed, err := ks.sealer.Seal(seedPurpose(k.ID), k.private.Seed())
	if err != nil {
		return fmt.Errorf("signing keys: %w", err)
	}
	raw, _ := json.MarshalIndent(keyFile{KID: k.ID, Algorithm: Algorithm, SeedSealed: sealed, CreatedAt: k.CreatedAt}, "", "  ")
	return atomicfile.Write(filepath.Join(ks.dir, k.ID+".json"), raw, 0o600)
}

// KIDFor derives a key id from the public key, so ids never collide and the
// same key always has the same id.
func KIDFor(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "ed25519-" + hex.EncodeToString(sum[:8])
}

// Rotate makes a new key, writes it (0600), and makes it active. Old keys
// stay in the set so what they signed still verifies.
func (ks *KeySet) Rotate() (Key, error) {
	if ks.db != nil {
		return ks.rotateDB()
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Key{}, fmt.Errorf("signing keys: generate: %w", err)
	}
	k := Key{ID: KIDFor(pub), Public: pub, private: priv, CreatedAt: time.Now().UTC()}
	if err := ks.writeKey(k); err != nil {
		return Key{}, err
	}
	// The key file is durable before the active pointer names it, so a crash
	// in between leaves the old active key in force, never a dangling kid.
	if err := atomicfile.Write(filepath.Join(ks.dir, activeFile), []byte(k.ID+"\n"), 0o600); err != nil {
		return Key{}, err
	}
	ks.mu.Lock()
	ks.keys = append(ks.keys, k)
	ks.active = k
	ks.mu.Unlock()
	return k, nil
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
