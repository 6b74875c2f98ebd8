package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// The store keeps a check value of the master key (a constant sealed under
// it, never the key), so a start with another key fails before anything
// is sealed or re-written under the wrong one.
const (
	bucketControlMeta = "control_meta"
	metaKeyCheck      = "master_key_check"
	purposeKeyCheck   = "control/master-key-check"
)

// ErrWrongMasterKey means the master key does not open this data directory.
var ErrWrongMasterKey = errors.New("the master key does not open this store")

// MasterKeyPath is where a configuration reads its master key.
func (c Config) MasterKeyPath() string {
	if c.MasterKeyFile != "" {
		return c.MasterKeyFile
	}
	return filepath.Join(c.Data, "master.key")
}

// openMasterKey loads (or, at the first start, creates 0600) the master
// key and checks it against the store. A key file this start created is
// removed again when the store belongs to another key, so a wrong start
// leaves the data directory as it was.
func (s *Server) openMasterKey() (*secrets.Sealer, error) {
	path := s.cfg.MasterKeyPath()
	key, created, err := secrets.LoadOrCreate(path)
	if err != nil {
		return nil, fmt.Errorf("--master-key-file: %w", err)
	}
	sealer, err := secrets.New(key)
	if err != nil {
		return nil, fmt.Errorf("--master-key-file %s: %w", path, err)
	}
	err = CheckMasterKey(s.db, sealer)
	if errors.Is(err, ErrWrongMasterKey) {
		how := "start with the key file this store was created with"
		if created {
			os.Remove(path)
			how = "the key file was missing (a new one was not kept); restore the original key file there or pass it with --master-key-file"
		}
		return nil, fmt.Errorf("--master-key-file %s (key id %s): %w %s: %s; refusing to start, nothing was changed",
			path, sealer.KeyID(), ErrWrongMasterKey, s.db.Location(), how)
	}
	if err != nil {
		return nil, fmt.Errorf("master key check: %w", err)
	}
	if created {
		s.log.Info("created a new master key; back it up apart from the data", "path", path, "key_id", sealer.KeyID())
	}
	return sealer, nil
}

// CheckMasterKey checks sealer's key against the check value in db,
// writing the check value when db has none yet. It returns
// ErrWrongMasterKey when the store belongs to another key.
func CheckMasterKey(db *store.DB, sealer *secrets.Sealer) error {
	return db.Update(func(tx *store.Tx) error {
		if raw := tx.GetRaw(bucketControlMeta, metaKeyCheck); raw != nil {
			if _, err := sealer.Open(purposeKeyCheck, string(raw)); err != nil {
				return ErrWrongMasterKey
			}
			return nil
		}
		check, err := sealer.Seal(purposeKeyCheck, []byte("deckhand master key check"))
		if err != nil {
			return err
		}
		return tx.PutRaw(bucketControlMeta, metaKeyCheck, []byte(check))
	})
}
