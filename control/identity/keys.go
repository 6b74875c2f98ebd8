package identity

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// ErrWrongMasterKey means the store's sealed keys do not open under the
// master key given: identity refuses to start and changes nothing.
var ErrWrongMasterKey = errors.New("the master key (--master-key-file) does not open the secrets in this store; " +
	"start with the key file this store was created with (refusing to start, nothing was changed)")

// Purposes under which identity seals its secrets (the GCM additional
// data: a value sealed for one never opens as another).
const (
	purposeKeys     = "identity/keys"
	purposeTOTP     = "identity/totp"
	purposeVerifier = "identity/oauth-verifier"
)

// Keys in bucketMeta.
const (
	metaKeys         = "keys_sealed" // dataKeys, sealed under the master key
	metaLegacyMaster = "master_key"  // before: the master key itself, in the clear
)

// dataKeys are identity's working keys. They are random, not derived from
// the master key, so a new master key re-seals them without ending
// sessions or invalidating svc_ tokens.
type dataKeys struct {
	JWT []byte `json:"jwt"` // HS256 of session JWTs
	MAC []byte `json:"mac"` // lookup keys of tokens, sessions, backup codes
}

// Labels the legacy in-store master key derived its keys with.
const (
	legacyJWTLabel = "deckhand identity jwt hs256"
	legacyEncLabel = "deckhand identity totp aes-256-gcm"
	legacyMACLabel = "deckhand identity lookup hmac"
)

func derive(master []byte, label string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(label))
	return m.Sum(nil)
}

func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// loadKeys opens the sealed data keys, or makes them on a new store, or
// migrates a store that still holds its master key in the clear: in one
// transaction the legacy key's TOTP secrets and OAuth verifiers are
// re-sealed under the master key, the lookup key is kept (svc_ tokens,
// backup codes and pending mail links keep working), the JWT key is
// replaced (any backup taken before held the old master key, so sessions
// it could forge must end) and the legacy key is deleted.
func (s *Service) loadKeys() error {
	var k dataKeys
	migrated := false
	err := s.update(func(tx *store.Tx) error {
		if raw := tx.GetRaw(bucketMeta, metaKeys); raw != nil {
			plain, err := s.sealer.Open(purposeKeys, string(raw))
			if errors.Is(err, secrets.ErrWrongKey) {
				return ErrWrongMasterKey
			}
			if err != nil {
				return fmt.Errorf("identity keys: %w", err)
			}
			if err := json.Unmarshal(plain, &k); err != nil || len(k.JWT) != 32 || len(k.MAC) != 32 {
				return errors.New("identity keys: malformed sealed keys")
			}
			return nil
		}
		k = dataKeys{JWT: randomKey(), MAC: randomKey()}
		if legacy := tx.GetRaw(bucketMeta, metaLegacyMaster); legacy != nil {
			if len(legacy) != 32 {
				return fmt.Errorf("identity keys: the legacy master key in the store has %d bytes, want 32", len(legacy))
			}
			legacy = append([]byte(nil), legacy...)
			k.MAC = derive(legacy, legacyMACLabel)
			if err := s.resealLegacy(tx, derive(legacy, legacyEncLabel)); err != nil {
				return err
			}
			if err := tx.Delete(bucketMeta, metaLegacyMaster); err != nil {
				return err
			}
			migrated = true
		}
		plain, _ := json.Marshal(k)
		sealed, err := s.sealer.Seal(purposeKeys, plain)
		if err != nil {
			return err
		}
		return tx.PutRaw(bucketMeta, metaKeys, []byte(sealed))
	})
	if err != nil {
		return err
	}
	s.jwtKey, s.macKey = k.JWT, k.MAC
	if migrated {
		s.log.Warn("identity: moved the master key out of the store; TOTP secrets are re-sealed under --master-key-file, "+
			"sessions from before end (log in again), svc_ tokens keep working", "master_key_id", s.sealer.KeyID())
	}
	return nil
}

// resealLegacy re-seals every TOTP secret and OAuth verifier that the
// legacy key sealed. (Writes come after each scan: bbolt buckets must not
// change under ForEach.)
func (s *Service) resealLegacy(tx *store.Tx, legacyEnc []byte) error {
	reseal := func(v *string, purpose string) error {
		if *v == "" || secrets.IsSealed(*v) {
			return nil
		}
		plain, err := legacyOpen(legacyEnc, *v)
		if err != nil {
			return fmt.Errorf("identity keys: a legacy sealed value does not open under the store's old master key: %w", err)
		}
		*v, err = s.sealer.Seal(purpose, plain)
		return err
	}
	var users []*userRec
	err := tx.ForEach(bucketUsers, func(_ string, raw []byte) error {
		var u userRec
		if err := json.Unmarshal(raw, &u); err != nil {
			return err
		}
		if u.TOTPSecret != "" || u.TOTPPending != "" {
			users = append(users, &u)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := reseal(&u.TOTPSecret, purposeTOTP); err != nil {
			return fmt.Errorf("user %s: %w", u.ID, err)
		}
		if err := reseal(&u.TOTPPending, purposeTOTP); err != nil {
			return fmt.Errorf("user %s: %w", u.ID, err)
		}
		if err := putUser(tx, u); err != nil {
			return err
		}
	}
	type onceEntry struct {
		key string
		rec onceRec
	}
	var states []onceEntry
	err = tx.ForEach(bucketOnce, func(key string, raw []byte) error {
		var r onceRec
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if r.Verifier != "" {
			states = append(states, onceEntry{key, r})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range states {
		if err := reseal(&e.rec.Verifier, purposeVerifier); err != nil {
			return err
		}
		if err := tx.Put(bucketOnce, e.key, e.rec); err != nil {
			return err
		}
	}
	return nil
}
