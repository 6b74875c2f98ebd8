package signing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

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

// OpenDB loads the key set kept in db, making the first key (in the same
// transaction that finds none, so replicas starting together agree on
// one) when the database holds none.
func OpenDB(ctx context.Context, db *store.DB, sealer *secrets.Sealer) (*KeySet, error) {
	if sealer == nil {
		return nil, errors.New("signing keys: a sealer (the master key) is required")
	}
	ks := &KeySet{db: db, sealer: sealer, dir: db.Location()}
	err := db.UpdateContext(ctx, func(tx *store.Tx) error {
		if tx.Count(bucketKeys) > 0 {
			return nil
		}
		k, err := newKey()
		if err != nil {
			return err
		}
		return ks.putKey(tx, k)
	})
	if err != nil {
		return nil, fmt.Errorf("signing keys in %s: %w", db.Location(), err)
	}
	if err := ks.Reload(); err != nil {
		return nil, err
	}
	return ks, nil
}

// Watch keeps a database-backed key set current until ctx ends: it reloads
// when a rotation is announced on KeysChannel (from any replica), after a
// notification gap, and every ReloadEvery in case a notification was
// lost. A failed reload keeps the loaded set. It returns at once for a key
// set kept in files (those reload on SIGHUP).
func (ks *KeySet) Watch(ctx context.Context, log *slog.Logger) {
	if ks.db == nil {
		return
	}
	log = cmp.Or(log, slog.Default())
	sub := ks.db.Subscribe(ctx, KeysChannel)
	t := time.NewTicker(ReloadEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-sub:
			if !ok {
				if ctx.Err() != nil {
					return
				}
				sub = nil // the store closed: keep the periodic reload only
				continue
			}
		case <-t.C:
		}
		before := ks.Active().ID
		if err := ks.Reload(); err != nil {
			log.Warn("signing keys reload failed; keeping the loaded set", "err", err)
			continue
		}
		if after := ks.Active().ID; after != before {
			log.Info("signing key rotated", "active_kid", after, "keys", len(ks.Keys()))
		}
	}
}
