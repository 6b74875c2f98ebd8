package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// With --database-url the keys live in the database, so every replica
// publishes the same set and signs with the same active key. The record of
// a key is the key file's JSON (the seed sealed under the master key, which
// never enters the database); the active kid is one more record. Rotation
// writes both in one transaction and publishes on KeysChannel, so replicas
// reload at once; a periodic reload covers a lost notification.
const (
	bucketKeys = "signing_keys"
	bucketMeta = "signing_meta"
	metaActive = "active"
	// KeysChannel carries the new active kid after a rotation.
	KeysChannel = "signing_keys"
	// ReloadEvery bounds how long a replica that missed the notification
	// signs with a rotated-out key.
	ReloadEvery = 2 * time.Second
)

func newKey() (Key, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Key{}, fmt.Errorf("signing keys: generate: %w", err)
	}
	return Key{ID: KIDFor(pub), Public: pub, private: priv, CreatedAt: time.Now().UTC()}, nil
}

// putKey stores k and makes it active, announcing it once tx commits.
func (ks *KeySet) putKey(tx *store.Tx, k Key) error {
	sealed, err := ks.sealer.Seal(seedPurpose(k.ID), k.private.Seed())
	if err != nil {
		return fmt.Errorf("signing keys: %w", err)
	}
	if err := tx.Put(bucketKeys, k.ID, keyFile{KID: k.ID, Algorithm: Algorithm, SeedSealed: sealed, CreatedAt: k.CreatedAt}); err != nil {
		return err
	}
	if err := tx.PutRaw(bucketMeta, metaActive, []byte(k.ID)); err != nil {
		return err
	}
	return tx.Publish(KeysChannel, k.ID)
}

// rotateDB adds a key and makes it active in one transaction.
func (ks *KeySet) rotateDB() (Key, error) {
	var k Key
	err := ks.db.Update(func(tx *store.Tx) error {
		var err error
		if k, err = newKey(); err != nil {
			return err
		}
		return ks.putKey(tx, k)
	})
	if err != nil {
		return Key{}, fmt.Errorf("signing keys in %s: %w", ks.db.Location(), err)
	}
	ks.mu.Lock()
	ks.keys = append(ks.keys, k)
	ks.active = k
	ks.mu.Unlock()
	return k, nil
}

// reloadDB reads every key and the active kid from one snapshot. Keys
// already loaded are not unsealed again.
func (ks *KeySet) reloadDB() error {
	ks.mu.RLock()
	known := make(map[string]Key, len(ks.keys))
	for _, k := range ks.keys {
		known[k.ID] = k
	}
	ks.mu.RUnlock()
	var keys []Key
	var activeID string
	err := ks.db.View(func(tx *store.Tx) error {
		keys, activeID = keys[:0], string(tx.GetRaw(bucketMeta, metaActive))
		return tx.ForEach(bucketKeys, func(kid string, raw []byte) error {
			if k, ok := known[kid]; ok {
				keys = append(keys, k)
				return nil
			}
			var f keyFile
			if err := json.Unmarshal(raw, &f); err != nil || f.Algorithm != Algorithm || f.KID != kid {
				return fmt.Errorf("signing keys: record %s in %s is not an ed25519 key", kid, ks.db.Location())
			}
			seed, err := ks.sealer.Open(seedPurpose(kid), f.SeedSealed)
			if errors.Is(err, secrets.ErrWrongKey) {
				return fmt.Errorf("signing keys: key %s in %s does not open under the master key (--master-key-file, key id %s): "+
					"every replica must start with the key file the first one created", kid, ks.db.Location(), ks.sealer.KeyID())
			}
			if err != nil || len(seed) != ed25519.SeedSize {
				return fmt.Errorf("signing keys: record %s in %s is not an ed25519 key", kid, ks.db.Location())
			}
			priv := ed25519.NewKeyFromSeed(seed)
			keys = append(keys, Key{ID: kid, Public: priv.Public().(ed25519.PublicKey), private: priv, CreatedAt: f.CreatedAt})
			return nil
		})
	})
	if err != nil {
		return err
	}
	sortKeys(keys)
	if len(keys) == 0 {
		return fmt.Errorf("signing keys: %s holds no key", ks.db.Location())
	}
	active := keys[len(keys)-1]
	if activeID != "" {
		found := false
		for _, k := range keys {
			if k.ID == activeID {
				active, found = k, true
			}
		}
		if !found {
			return fmt.Errorf("signing keys: %s names active kid %q but holds no such key", ks.db.Location(), activeID)
		}
	}
	ks.mu.Lock()
	ks.keys, ks.active = keys, active
	ks.mu.Unlock()
	return nil
}
