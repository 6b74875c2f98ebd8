package signing

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"deckhand/platform/atomicfile"
	"deckhand/platform/secrets"
)

// activeFile names the file holding the active kid inside the key directory.
const activeFile = "active"

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

// Rotate makes a new key, writes it (0600), and makes it active. Old keys
// stay in the set so what they signed still verifies.
func (ks *KeySet) Rotate() (Key, error) {
	if ks.db != nil {
		return ks.rotateDB()
	}
	k, err := newKey()
	if err != nil {
		return Key{}, err
	}
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
