// Package store owns deckhand's embedded persistence: one bbolt file per
// process side, opened once, with one bucket per domain and JSON values.
// Every request's reads and writes run in one transaction so checks and
// changes (balances, tickets, versions) commit together or not at all.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrLocked means another process holds the data file.
var ErrLocked = errors.New("data file is in use by another process")

// DB is an open bbolt file.
type DB struct {
	bolt *bolt.DB
	path string
}

// Open opens (creating) the bbolt file at path. It waits at most one second
// for the file lock so a second process fails fast with ErrLocked.
func Open(path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &DB{bolt: b, path: path}, nil
}

// Path is the file's location.
func (d *DB) Path() string { return d.path }

// Close releases the file.
func (d *DB) Close() error { return d.bolt.Close() }

// Bolt exposes the underlying handle for the rare caller that needs it.
func (d *DB) Bolt() *bolt.DB { return d.bolt }

// Update runs fn in a read-write transaction; an error from fn rolls back.
func (d *DB) Update(fn func(tx *Tx) error) error {
	return d.bolt.Update(func(t *bolt.Tx) error { return fn(&Tx{t}) })
}

// View runs fn in a read-only transaction.
func (d *DB) View(fn func(tx *Tx) error) error {
	return d.bolt.View(func(t *bolt.Tx) error { return fn(&Tx{t}) })
}

// Tx is a transaction with JSON helpers over named buckets.
type Tx struct{ tx *bolt.Tx }

// Bolt exposes the raw transaction.
func (t *Tx) Bolt() *bolt.Tx { return t.tx }

func (t *Tx) bucket(name string, create bool) (*bolt.Bucket, error) {
	if b := t.tx.Bucket([]byte(name)); b != nil {
		return b, nil
	}
	if !create || !t.tx.Writable() {
		return nil, nil
	}
	return t.tx.CreateBucket([]byte(name))
}

// Get decodes bucket[key] into v and reports whether it existed.
func (t *Tx) Get(bucket, key string, v any) (bool, error) {
	raw := t.GetRaw(bucket, key)
	if raw == nil {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// GetRaw returns the stored bytes (valid only inside the transaction).
func (t *Tx) GetRaw(bucket, key string) []byte {
	b, _ := t.bucket(bucket, false)
	if b == nil {
		return nil
	}
	return b.Get([]byte(key))
}

// Put encodes v as JSON into bucket[key].
func (t *Tx) Put(bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.PutRaw(bucket, key, raw)
}

// PutRaw stores bytes as they are.
func (t *Tx) PutRaw(bucket, key string, raw []byte) error {
	b, err := t.bucket(bucket, true)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), raw)
}

// Delete removes bucket[key]; a missing key is not an error.
func (t *Tx) Delete(bucket, key string) error {
	b, err := t.bucket(bucket, false)
	if err != nil || b == nil {
		return err
	}
	return b.Delete([]byte(key))
}

// NextSeq returns the bucket's next sequence number (1, 2, ...).
func (t *Tx) NextSeq(bucket string) (uint64, error) {
	b, err := t.bucket(bucket, true)
	if err != nil {
		return 0, err
	}
	return b.NextSequence()
}

// ForEach visits bucket entries in key order; return ErrStop to end early.
func (t *Tx) ForEach(bucket string, fn func(key string, raw []byte) error) error {
	b, _ := t.bucket(bucket, false)
	if b == nil {
		return nil
	}
	err := b.ForEach(func(k, v []byte) error { return fn(string(k), v) })
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

// ForEachPrefix visits keys starting with prefix, in order.
func (t *Tx) ForEachPrefix(bucket, prefix string, fn func(key string, raw []byte) error) error {
	b, _ := t.bucket(bucket, false)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && len(k) >= len(p) && string(k[:len(p)]) == prefix; k, v = c.Next() {
		if err := fn(string(k), v); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

// Count is the number of keys in a bucket.
func (t *Tx) Count(bucket string) int {
	b, _ := t.bucket(bucket, false)
	if b == nil {
		return 0
	}
	return b.Stats().KeyN
}

// ErrStop ends a ForEach early without error.
var ErrStop = errors.New("stop")

// SeqKey renders a sequence number as a sortable key.
func SeqKey(n uint64) string {
	return fmt.Sprintf("%020d", n)
}
