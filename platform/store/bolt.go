package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Open opens (creating) the bbolt file at path: the embedded engine. It
// waits at most one second for the file lock so a second process fails
// fast with ErrLocked.
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
	e := &boltEngine{path: path, db: b, listeners: map[int]func(string, Notification){}, cataloged: map[string]bool{}}
	if err := e.loadCatalog(); err != nil {
		b.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return New(e), nil
}

// boltEngine keeps one process's data in one file; its notifications never
// leave the process, which is the only one that can open the file.
type boltEngine struct {
	path      string
	db        *bolt.DB
	mu        sync.Mutex
	listeners map[int]func(string, Notification)
	next      int
	// cataloged are the buckets this file holds as declared tables.
	cataloged map[string]bool
}

// catalogBucket maps each declared table to the fingerprint of its
// declaration (the layout of a table's buckets: bolttable.go).
const catalogBucket = internalPrefix + "store_tables"

// loadCatalog reads the names of the tables this file holds.
func (e *boltEngine) loadCatalog() error {
	return e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(catalogBucket))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			e.cataloged[string(k)] = true
			return nil
		})
	})
}

func (e *boltEngine) isTable(bucket string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cataloged[bucket]
}

func (e *boltEngine) Update(ctx context.Context, _ UpdateOptions, fn func(EngineTx) error) error {
	var sent []note
	err := e.db.Update(func(t *bolt.Tx) error {
		bt := &boltTx{tx: t, e: e}
		if err := fn(bt); err != nil {
			return err
		}
		sent = bt.notes
		return ctx.Err()
	})
	if err == nil {
		for _, n := range sent {
			e.deliver(n.channel, Notification{Payload: n.payload})
		}
	}
	return err
}

func (e *boltEngine) View(_ context.Context, fn func(EngineTx) error) error {
	return e.db.View(func(t *bolt.Tx) error { return fn(&boltTx{tx: t, e: e}) })
}

func (e *boltEngine) Close() error { return e.db.Close() }

// Location is the bbolt file's path.
func (e *boltEngine) Location() string { return e.path }

func (e *boltEngine) Publish(_ context.Context, channel, payload string) error {
	e.deliver(channel, Notification{Payload: payload})
	return nil
}

func (e *boltEngine) Listen(ctx context.Context, deliver func(string, Notification), ready func()) {
	e.mu.Lock()
	id := e.next
	e.next++
	e.listeners[id] = deliver
	e.mu.Unlock()
	ready()
	<-ctx.Done()
	e.mu.Lock()
	delete(e.listeners, id)
	e.mu.Unlock()
}

func (e *boltEngine) deliver(channel string, n Notification) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range e.listeners {
		l(channel, n)
	}
}

type note struct{ channel, payload string }

type boltTx struct {
	tx *bolt.Tx
	e  *boltEngine
	// writes counts changes so a scan re-seeks its cursor after fn wrote.
	writes int
	notes  []note
}

func (t *boltTx) bucket(name string, create bool) (*bolt.Bucket, error) {
	if b := t.tx.Bucket([]byte(name)); b != nil {
		return b, nil
	}
	if !create {
		return nil, nil
	}
	t.writes++
	return t.tx.CreateBucket([]byte(name))
}

func (t *boltTx) Get(bucket, key string) ([]byte, error) {
	b, _ := t.bucket(bucket, false)
	if b == nil {
		return nil, nil
	}
	return b.Get([]byte(key)), nil
}

// GetForUpdate is Get: the one writer holds every row already.
func (t *boltTx) GetForUpdate(bucket, key string) ([]byte, error) { return t.Get(bucket, key) }

func (t *boltTx) GetMany(bucket string, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	b, _ := t.bucket(bucket, false)
	if b == nil {
		return out, nil
	}
	for i, k := range keys {
		out[i] = b.Get([]byte(k))
	}
	return out, nil
}

func (t *boltTx) Put(bucket, key string, raw []byte, _ bool) error {
	if t.e.isTable(bucket) {
		return fmt.Errorf("%s: %w", bucket, ErrUndeclared)
	}
	b, err := t.bucket(bucket, true)
	if err != nil {
		return err
	}
	t.writes++
	return b.Put([]byte(key), raw)
}

func (t *boltTx) Delete(bucket, key string) error {
	if t.e.isTable(bucket) {
		return fmt.Errorf("%s: %w", bucket, ErrUndeclared)
	}
	b, err := t.bucket(bucket, false)
	if err != nil || b == nil {
		return err
	}
	t.writes++
	return b.Delete([]byte(key))
}

func (t *boltTx) NextSeq(bucket string) (uint64, error) {
	b, err := t.bucket(bucket, true)
	if err != nil {
		return 0, err
	}
	return b.NextSequence()
}

func (t *boltTx) Notify(channel, payload string) error {
	t.notes = append(t.notes, note{channel, payload})
	return nil
}

func (t *boltTx) Count(bucket, prefix string) (int, error) {
	b, _ := t.bucket(bucket, false)
	if b == nil {
		return 0, nil
	}
	if prefix == "" {
		return b.Stats().KeyN, nil
	}
	n := 0
	c := b.Cursor()
	p := []byte(prefix)
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		n++
	}
	return n, nil
}

func (t *boltTx) Scan(bucket string, o ScanOptions, fn func(string, []byte) error) error {
	b, _ := t.bucket(bucket, false)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	k, v := boltFirst(c, o)
	for n := 0; k != nil && strings.HasPrefix(string(k), o.Prefix); n++ {
		if o.Limit > 0 && n >= o.Limit {
			return nil
		}
		key := string(k)
		before := t.writes
		if err := fn(key, v); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
		if t.writes != before { // fn wrote: the cursor may be stale
			k, v = c.Seek([]byte(key))
			if o.Reverse {
				k, v = boltBefore(c, k)
			} else if k != nil && string(k) == key {
				k, v = c.Next()
			}
			continue
		}
		if o.Reverse {
			k, v = c.Prev()
		} else {
			k, v = c.Next()
		}
	}
	return nil
}

// boltBefore steps back from the cursor's position after a Seek (k is the
// first key >= the sought one, nil past the end) to the greatest key below.
func boltBefore(c *bolt.Cursor, k []byte) ([]byte, []byte) {
	if k == nil {
		return c.Last()
	}
	return c.Prev()
}

// boltFirst positions c on the first entry a scan visits.
func boltFirst(c *bolt.Cursor, o ScanOptions) ([]byte, []byte) {
	if !o.Reverse {
		k, v := c.Seek([]byte(max(o.Prefix, o.Start)))
		if o.Exclusive && k != nil && string(k) == o.Start {
			k, v = c.Next()
		}
		return k, v
	}
	end, bounded := PrefixEnd(o.Prefix)
	if o.Start != "" && (o.Prefix == "" || !bounded || o.Start < end) {
		k, v := c.Seek([]byte(o.Start))
		if k == nil || string(k) > o.Start || (o.Exclusive && string(k) == o.Start) {
			return boltBefore(c, k)
		}
		return k, v
	}
	if o.Prefix == "" || !bounded {
		return c.Last()
	}
	k, _ := c.Seek([]byte(end))
	return boltBefore(c, k)
}

// PrefixEnd is the least UTF-8 string above every string that starts with
// prefix (false when there is none): the last rune is incremented, dropping
// runes that are already the greatest. UTF-8 byte order is code point
// order, so this bounds the prefix's range on every engine.
func PrefixEnd(prefix string) (string, bool) {
	r := []rune(prefix)
	for i := len(r) - 1; i >= 0; i-- {
		switch {
		case r[i] == 0x10FFFF:
			continue
		case r[i] == 0xD7FF:
			r[i] = 0xE000 // skip the surrogates, which UTF-8 cannot hold
		default:
			r[i]++
		}
		return string(r[:i+1]), true
	}
	return "", false
}

func (t *boltTx) Buckets() ([]BucketInfo, error) {
	var out []BucketInfo
	err := t.tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if isInternal(string(name)) {
			return nil
		}
		out = append(out, BucketInfo{Name: string(name), Keys: b.Stats().KeyN, Seq: b.Sequence()})
		return nil
	})
	return out, err
}

func (t *boltTx) SetSeq(bucket string, n uint64) error {
	b, err := t.bucket(bucket, true)
	if err != nil {
		return err
	}
	return b.SetSequence(n)
}
