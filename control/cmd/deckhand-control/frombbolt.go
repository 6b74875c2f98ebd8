package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"deckhand/control/server"
	"deckhand/platform/secrets"
	"deckhand/platform/signing"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

// fromBbolt is `migrate --from-bbolt PATH --database-url URL`: it copies a
// stopped control plane's embedded store (every bucket, key and sequence,
// values byte for byte) and its signing keys into PostgreSQL, then checks
// every bucket's count and sequence. The master key stays the same file
// (--master-key-file, default <data>/master.key): the store's sealed
// secrets and its master-key check move unchanged.
//
// A target that already holds this copy is left alone (a second run is a
// no-op that re-checks). A target holding anything else is refused unless
// --force, which first deletes everything in it.
type fromBbolt struct {
	path, dbURL, keyFile string
	force                bool
	out                  io.Writer
}

// batch is how many keys one target transaction writes.
const batch = 500

func (m fromBbolt) run(ctx context.Context) error {
	if m.dbURL == "" {
		return errors.New("--from-bbolt needs --database-url (the PostgreSQL database to copy into)")
	}
	data, file := m.path, filepath.Join(m.path, "control.db")
	if st, err := os.Stat(m.path); err != nil {
		return fmt.Errorf("--from-bbolt %s: %w", m.path, err)
	} else if !st.IsDir() {
		data, file = filepath.Dir(m.path), m.path
	}
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("--from-bbolt: no embedded store at %s: %w", file, err)
	}
	cfg := server.Config{Data: data, MasterKeyFile: m.keyFile}
	key, err := secrets.ReadKeyFile(cfg.MasterKeyPath())
	if err != nil {
		return fmt.Errorf("--master-key-file: %w (the key file the bbolt control plane used)", err)
	}
	sealer, err := secrets.New(key)
	if err != nil {
		return fmt.Errorf("--master-key-file %s: %w", cfg.MasterKeyPath(), err)
	}
	src, err := store.Open(file)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("--from-bbolt %s is in use: stop the control plane before copying its store", file)
	}
	if err != nil {
		return fmt.Errorf("--from-bbolt: %w", err)
	}
	defer src.Close()
	if err := server.CheckMasterKey(src, sealer); err != nil {
		return fmt.Errorf("--master-key-file %s: %w", cfg.MasterKeyPath(), err)
	}
	var keys *signing.KeySet
	if _, err := os.Stat(server.KeysDir(data)); err == nil {
		if keys, err = signing.Open(server.KeysDir(data), sealer); err != nil {
			return err
		}
	}
	dst, err := pgstore.Open(ctx, m.dbURL)
	if err != nil {
		return fmt.Errorf("--database-url: %w", err)
	}
	defer dst.Close()
	// Declared tables take the copied records with their columns and
	// indexes, as the server will read them.
	if err := dst.Declare(ctx, server.Tables()...); err != nil {
		return fmt.Errorf("--database-url: %w", err)
	}

	want, err := buckets(ctx, src)
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	have, err := buckets(ctx, dst)
	if err != nil {
		return err
	}
	if len(have) > 0 {
		same, why := m.sameAs(ctx, src, dst, want, have, keys)
		switch {
		case same:
			fmt.Fprintf(m.out, "%s already holds this store; nothing copied\n", dst.Location())
			return m.report(want, have)
		case !m.force:
			return fmt.Errorf("--database-url %s is not empty (%s): refusing to copy over it; "+
				"--force deletes everything in it first", dst.Location(), why)
		}
		if err := clearStore(ctx, dst, have); err != nil {
			return err
		}
		fmt.Fprintf(m.out, "cleared %s (--force)\n", dst.Location())
	}
	for _, b := range want {
		if err := copyBucket(ctx, src, dst, b); err != nil {
			return fmt.Errorf("copy bucket %s: %w", b.Name, err)
		}
	}
	if keys != nil {
		if err := dst.UpdateContext(ctx, keys.CopyToDB); err != nil {
			return fmt.Errorf("copy signing keys: %w", err)
		}
	}
	if have, err = buckets(ctx, dst); err != nil {
		return err
	}
	return m.report(want, have)
}

func buckets(ctx context.Context, db *store.DB) (bs []store.BucketInfo, err error) {
	err = db.ViewContext(ctx, func(tx *store.Tx) error {
		bs, err = tx.Buckets()
		return err
	})
	return bs, err
}

// copyBucket copies one bucket in batches of keys, values as exact bytes
// (PutRaw: what a reader gets back is what bbolt held), then its sequence.
func copyBucket(ctx context.Context, src, dst *store.DB, b store.BucketInfo) error {
	type kv struct {
		k string
		v []byte
	}
	after := ""
	for {
		var page []kv
		err := src.ViewContext(ctx, func(tx *store.Tx) error {
			page = page[:0]
			return tx.Scan(b.Name, store.ScanOptions{Start: after, Exclusive: after != "", Limit: batch}, func(k string, raw []byte) error {
				page = append(page, kv{k, slices.Clone(raw)})
				return nil
			})
		})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		if err := dst.UpdateContext(ctx, func(tx *store.Tx) error {
			for _, e := range page {
				if err := tx.PutRaw(b.Name, e.k, e.v); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		after = page[len(page)-1].k
		if len(page) < batch {
			break
		}
	}
	if b.Seq == 0 {
		return nil
	}
	return dst.UpdateContext(ctx, func(tx *store.Tx) error { return tx.SetSeq(b.Name, b.Seq) })
}

// clearStore deletes every key and sequence of the target (--force).
func clearStore(ctx context.Context, db *store.DB, have []store.BucketInfo) error {
	for _, b := range have {
		for {
			var ks []string
			err := db.ViewContext(ctx, func(tx *store.Tx) error {
				return tx.Scan(b.Name, store.ScanOptions{Limit: batch}, func(k string, _ []byte) error {
					ks = append(ks, k)
					return nil
				})
			})
			if err != nil {
				return err
			}
			if len(ks) == 0 {
				break
			}
			if err := db.UpdateContext(ctx, func(tx *store.Tx) error {
				for _, k := range ks {
					if err := tx.Delete(b.Name, k); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		if err := db.UpdateContext(ctx, func(tx *store.Tx) error { return tx.SetSeq(b.Name, 0) }); err != nil {
			return err
		}
	}
	return nil
}

// sameAs reports whether dst, whose buckets are have, already holds
// exactly src (and src's signing keys), and otherwise why not.
func (m fromBbolt) sameAs(ctx context.Context, src, dst *store.DB, want, have []store.BucketInfo, keys *signing.KeySet) (bool, string) {
	signingBuckets := signing.DBBuckets()
	got := map[string]store.BucketInfo{}
	for _, b := range have {
		if !slices.Contains(signingBuckets, b.Name) || keys == nil {
			got[b.Name] = b
		}
	}
	for _, b := range want {
		g, ok := got[b.Name]
		if !ok || g.Keys != b.Keys || g.Seq != b.Seq {
			return false, fmt.Sprintf("bucket %s has %d keys, sequence %d; the source %d keys, sequence %d", b.Name, g.Keys, g.Seq, b.Keys, b.Seq)
		}
		delete(got, b.Name)
	}
	for name, g := range got {
		return false, fmt.Sprintf("bucket %s (%d keys) is not in the source", name, g.Keys)
	}
	for _, b := range want {
		differ := ""
		err := src.ViewContext(ctx, func(stx *store.Tx) error {
			return dst.ViewContext(ctx, func(dtx *store.Tx) error {
				return stx.ForEach(b.Name, func(k string, raw []byte) error {
					if string(dtx.GetRaw(b.Name, k)) != string(raw) {
						differ = k
						return store.ErrStop
					}
					return nil
				})
			})
		})
		if err != nil {
			return false, err.Error()
		}
		if differ != "" {
			return false, fmt.Sprintf("bucket %s key %s differs from the source", b.Name, differ)
		}
	}
	if keys != nil {
		var ids []string
		var active string
		err := dst.ViewContext(ctx, func(tx *store.Tx) (err error) {
			ids, active, err = signing.KeyIDsInDB(tx)
			return err
		})
		if err != nil {
			return false, err.Error()
		}
		var want []string
		for _, k := range keys.Keys() {
			want = append(want, k.ID)
		}
		sort.Strings(ids)
		sort.Strings(want)
		if !slices.Equal(ids, want) || active != keys.Active().ID {
			return false, "its signing keys are not the source's"
		}
	}
	return true, ""
}

// report prints each bucket's counts on both sides and fails naming every
// bucket whose keys or sequence differ.
func (m fromBbolt) report(want, have []store.BucketInfo) error {
	got := map[string]store.BucketInfo{}
	for _, b := range have {
		got[b.Name] = b
	}
	var bad []string
	total := 0
	for _, b := range want {
		g := got[b.Name]
		state := "ok"
		if g.Keys != b.Keys || g.Seq != b.Seq {
			state = "MISMATCH"
			bad = append(bad, b.Name)
		}
		total += b.Keys
		fmt.Fprintf(m.out, "%-32s keys %6d -> %6d  seq %6d -> %6d  %s\n", b.Name, b.Keys, g.Keys, b.Seq, g.Seq, state)
	}
	if len(bad) > 0 {
		return fmt.Errorf("counts differ after the copy in buckets %v", bad)
	}
	fmt.Fprintf(m.out, "copied %d buckets, %d keys; every count matches\n", len(want), total)
	return nil
}

// migrateTimeout bounds a whole copy.
const migrateTimeout = 2 * time.Hour
