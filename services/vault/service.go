// Package vault owns the container's key/value vault: JSON values under
// short keys, with versions (compare-and-set through If-Match), TTL expiry,
// a listing without values, stats and wipe-all. Values are sealed with
// AES-256-GCM (platform/secrets) under the key in --vault-key-file, bound
// to their key name, so neither the store file nor a copy of it shows a
// value; a check value sealed at first start makes a wrong key file a clear
// start-up error instead of garbage.
package vault

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// Limits on keys and values.
const (
	MaxKeyLen     = 128     // bytes of a key name
	MaxValueBytes = 1 << 20 // bytes of a value's JSON
	MaxTTLSeconds = 10 * 365 * 24 * 3600
)

const (
	bucketKeys = "keys"
	bucketMeta = "meta"
	metaCheck  = "check"
	checkPlain = "deckhand vault key check"
)

// Settings are the vault's flags.
type Settings struct {
	// KeyFile holds the 32-byte key values are sealed under; "" means
	// <data>/vault.key, created 0600 at first start.
	KeyFile string
}

// Flags declares --vault-key-file.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.KeyFile, "vault-key-file", "", "file holding the vault's AES-256 key (64 hex digits); default <data>/vault.key, created 0600 at first start")
}

// Service is the vault.
type Service struct {
	db     *store.DB
	sealer *secrets.Sealer
	clock  clockpkg.Clock
	stop   context.CancelFunc
	done   sync.WaitGroup
}

// New opens the vault: it reads (or creates) the key file and checks it
// against the check value sealed at first start, so a wrong key stops the
// service with an error naming the file.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = &Settings{}
	}
	deps = deps.WithDefaults()
	path := cmp.Or(set.KeyFile, filepath.Join(filepath.Dir(deps.DataDir), "vault.key"))
	key, _, err := secrets.LoadOrCreate(path)
	if err != nil {
		return nil, fmt.Errorf("--vault-key-file: %w", err)
	}
	sealer, err := secrets.New(key)
	if err != nil {
		return nil, fmt.Errorf("--vault-key-file %s: %w", path, err)
	}
	if err := deps.Store.Declare(context.Background(), keyTable); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	s := &Service{db: deps.Store, sealer: sealer, clock: deps.Clock}
	if err := s.checkKey(path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.done.Go(func() { s.sweep(ctx) })
	return s, nil
}

// checkKey opens the check value, or seals one on a fresh store.
func (s *Service) checkKey(path string) error {
	return s.db.Update(func(tx *store.Tx) error {
		var sealed string
		found, err := tx.Get(bucketMeta, metaCheck, &sealed)
		if err != nil {
			return err
		}
		if found {
			plain, err := s.sealer.Open("vault/check", sealed)
			if err != nil || string(plain) != checkPlain {
				return fmt.Errorf("--vault-key-file %s (key id %s) is not the key this vault was sealed with: "+
					"restore the original key file, or move %s away to start an empty vault", path, s.sealer.KeyID(), s.db.Location())
			}
			return nil
		}
		if tx.Count(bucketKeys) > 0 {
			return fmt.Errorf("vault store %s holds values but no key check value; refusing to guess whether --vault-key-file %s opens them", s.db.Location(), path)
		}
		sealed, err = s.sealer.Seal("vault/check", []byte(checkPlain))
		if err != nil {
			return err
		}
		return tx.Put(bucketMeta, metaCheck, sealed)
	})
}

// sweep removes expired keys once a minute (reads already treat them as
// absent; this gives their space back).
func (s *Service) sweep(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = s.Purge(ctx)
		}
	}
}

// Close stops the sweeper.
func (s *Service) Close() error {
	s.stop()
	s.done.Wait()
	return nil
}

// Info titles the vault's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "vault",
		Title:   "deckhand vault",
		Version: platform.Version,
		Description: "Key/value vault of JSON values. Values are encrypted at rest with AES-256-GCM under --vault-key-file " +
			"(default <data>/vault.key, created 0600 at first start; a wrong key stops the service at start). " +
			"Keys are 1-128 characters of A-Z a-z 0-9 . _ - (not \".\" or \"..\"); values at most 1 MiB of JSON (413 beyond). " +
			"Every record has a version (1 on create, +1 per write), also sent as the ETag \"N\"; writes with If-Match \"N\" " +
			"apply only to that version (412 PRECONDITION_FAILED otherwise, so two writers never lose an update), " +
			"If-Match * only to an existing key, If-None-Match * only create. Errors are {\"code\",\"details\",\"message\"}.",
	}
}

var errExpired = errors.New("expired")
