package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Tx is a transaction with JSON helpers over named buckets.
type Tx struct {
	e        EngineTx
	ctx      context.Context
	tables   map[string]*Table
	writable bool
	err      error // first engine error; fails the transaction
	after    []func()
}

// Context is the context the transaction runs under.
func (t *Tx) Context() context.Context { return t.ctx }

// Writable reports whether this is an Update.
func (t *Tx) Writable() bool { return t.writable }

// AfterCommit runs f once the transaction has committed (never when it
// rolls back, once however often the function re-ran): the place for cache
// invalidation and other effects outside the store.
func (t *Tx) AfterCommit(f func()) { t.after = append(t.after, f) }

// fail records an engine error; the transaction will not commit.
func (t *Tx) fail(err error) error {
	if err != nil && t.err == nil {
		t.err = err
	}
	return err
}

// Get decodes bucket[key] into v and reports whether it existed.
func (t *Tx) Get(bucket, key string, v any) (bool, error) {
	return t.get(t.e.Get, bucket, key, v)
}

// GetForUpdate is Get that locks the record's row until the transaction
// ends (SELECT ... FOR UPDATE on PostgreSQL; bbolt's one writer holds
// everything already). A missing record locks nothing. In an
// UpdateLocking it is what makes a read-then-write exact. In a View it is
// ErrReadOnly.
func (t *Tx) GetForUpdate(bucket, key string, v any) (bool, error) {
	if !t.writable {
		return false, ErrReadOnly
	}
	return t.get(t.e.GetForUpdate, bucket, key, v)
}

func (t *Tx) get(read func(bucket, key string) ([]byte, error), bucket, key string, v any) (bool, error) {
	if validBucket(bucket) != nil || validKey(key) != nil {
		return false, nil
	}
	raw, err := read(bucket, key)
	if err != nil {
		return false, t.fail(err)
	}
	if raw == nil {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// GetRaw returns the stored bytes, nil when missing (on bbolt they are
// valid only inside the transaction). An engine failure returns nil and
// fails the transaction.
func (t *Tx) GetRaw(bucket, key string) []byte {
	if validBucket(bucket) != nil || validKey(key) != nil {
		return nil
	}
	raw, err := t.e.Get(bucket, key)
	if t.fail(err) != nil {
		return nil
	}
	return raw
}

// MaxKeysPerRead is how many keys GetRawMany hands the engine at once (one
// statement on PostgreSQL): a page or a scan chunk fits in one, and the
// statement's key array stays under about 1 MB however long the keys.
const MaxKeysPerRead = 1000

// GetRawMany returns the stored bytes of each key, in the order of keys:
// out[i] is keys[i]'s value, nil when it is missing (or not a valid key).
// Keys may repeat. Values written earlier in the same transaction are
// read. On PostgreSQL it costs one round trip per MaxKeysPerRead keys
// instead of one per key; on bbolt it is a loop of lookups. As with
// GetRaw, bbolt's bytes are valid only inside the transaction, and
// repeated keys may share one slice: do not modify them. An engine
// failure fails the transaction.
func (t *Tx) GetRawMany(bucket string, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	if validBucket(bucket) != nil {
		return out, nil
	}
	idx := make([]int, 0, min(len(keys), MaxKeysPerRead)) // positions of the chunk's valid keys
	chunk := make([]string, 0, cap(idx))
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		vals, err := t.e.GetMany(bucket, chunk)
		if err != nil {
			return t.fail(err)
		}
		for j, i := range idx {
			out[i] = vals[j]
		}
		idx, chunk = idx[:0], chunk[:0]
		return nil
	}
	for i, k := range keys {
		if validKey(k) != nil {
			continue
		}
		idx, chunk = append(idx, i), append(chunk, k)
		if len(chunk) == MaxKeysPerRead {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// GetMany decodes the JSON of each key of bucket, in the order of keys:
// out[i] is keys[i]'s value, nil when it is missing. It is GetRawMany with
// decoding (a function, since methods cannot take type parameters).
func GetMany[T any](tx *Tx, bucket string, keys []string) ([]*T, error) {
	raws, err := tx.GetRawMany(bucket, keys)
	if err != nil {
		return nil, err
	}
	out := make([]*T, len(keys))
	for i, raw := range raws {
		if raw == nil {
			continue
		}
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			return nil, fmt.Errorf("%s %q: %w", bucket, keys[i], err)
		}
		out[i] = v
	}
	return out, nil
}

// Under decodes the JSON of every value of bucket whose key starts with
// prefix ("": every one), in key order.
func Under[T any](tx *Tx, bucket, prefix string) ([]T, error) {
	var out []T
	err := tx.ForEachPrefix(bucket, prefix, func(key string, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("%s %q: %w", bucket, key, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// Put encodes v as JSON into bucket[key].
func (t *Tx) Put(bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.put(bucket, key, v, raw, true)
}

// PutRaw stores bytes exactly as they are.
func (t *Tx) PutRaw(bucket, key string, raw []byte) error {
	return t.put(bucket, key, nil, raw, false)
}

func (t *Tx) put(bucket, key string, v any, raw []byte, isJSON bool) error {
	if err := t.writeCheck(bucket, key); err != nil {
		return err
	}
	if raw == nil {
		raw = []byte{}
	}
	if tb := t.tables[bucket]; tb != nil {
		row, err := tb.row(v, raw)
		if err != nil {
			return err
		}
		return t.fail(t.e.PutRow(tb, key, raw, isJSON, Row{t: tb, vals: row}))
	}
	return t.fail(t.e.Put(bucket, key, raw, isJSON))
}

// Delete removes bucket[key]; a missing key is not an error.
func (t *Tx) Delete(bucket, key string) error {
	if err := t.writeCheck(bucket, key); err != nil {
		return err
	}
	if tb := t.tables[bucket]; tb != nil {
		return t.fail(t.e.DeleteRow(tb, key))
	}
	return t.fail(t.e.Delete(bucket, key))
}

// DropBucket removes every key of bucket and its sequence in one go (a
// bucket a domain no longer uses). A declared table cannot be dropped.
func (t *Tx) DropBucket(bucket string) error {
	if err := t.writeCheck(bucket, "seq"); err != nil {
		return err
	}
	if t.tables[bucket] != nil {
		return fmt.Errorf("bucket %s is a declared table", bucket)
	}
	return t.fail(t.e.DropBucket(bucket))
}

// Page answers q over table: the records that pass every filter, in the
// query's order, skipping Offset or resuming after Cursor, at most
// Limit, with the number of matches and the cursor of the next page. A
// query the table cannot answer (an unknown field, a value of the wrong
// type, an order no index declares) is a *QueryError. On bbolt the
// values are valid only inside the transaction.
func (t *Tx) Page(table *Table, q Query) (RawPage, error) {
	if tb := t.tables[table.Name]; tb == nil || (tb != table && tb.Fingerprint() != table.Fingerprint()) {
		return RawPage{}, fmt.Errorf("table %s is not declared on this store (DB.Declare)", table.Name)
	}
	p, err := compile(table, q)
	if err != nil {
		return RawPage{}, err
	}
	res, err := t.e.Page(p)
	if err != nil {
		return RawPage{}, t.fail(err)
	}
	out := RawPage{Items: res.Items, Total: res.Total}
	if out.Items == nil {
		out.Items = []Item{}
	}
	if res.More && len(res.Items) > 0 {
		last := res.Items[len(res.Items)-1]
		if out.Next, err = p.cursorAt(last.Key, last.Value); err != nil {
			return RawPage{}, err
		}
	}
	return out, nil
}

// CountBy counts the records of table that pass filters, by the value of
// field (text as it is; int in decimal; time in RFC 3339); records whose
// field is NULL are not counted.
func (t *Tx) CountBy(table *Table, filters []Filter, field string) (map[string]int, error) {
	if tb := t.tables[table.Name]; tb == nil || (tb != table && tb.Fingerprint() != table.Fingerprint()) {
		return nil, fmt.Errorf("table %s is not declared on this store (DB.Declare)", table.Name)
	}
	pos, ok := table.pos[field]
	if !ok {
		return nil, qerr(field, "is not a field of %s; fields: %s", table.Name, table.fieldNames())
	}
	p, err := compile(table, Query{Filters: filters})
	if err != nil {
		return nil, err
	}
	out, err := t.e.CountBy(p, pos)
	if err != nil {
		return nil, t.fail(err)
	}
	return out, nil
}

// All decodes every record q selects, in its order, reading pages of
// q.Limit (default 1000) by cursor; q's Offset, Cursor and total are not
// used. It returns the records and their keys.
func All[T any](tx *Tx, table *Table, q Query) ([]T, []string, error) {
	var items []T
	var keys []string
	q.Offset, q.Cursor, q.SkipTotal = 0, "", true
	q.Limit = cmp.Or(q.Limit, 1000)
	for {
		pg, err := PageOf[T](tx, table, q)
		if err != nil {
			return nil, nil, err
		}
		items, keys = append(items, pg.Items...), append(keys, pg.Keys...)
		if pg.Next == "" {
			return items, keys, nil
		}
		q.Cursor = pg.Next
	}
}

// Keys are the keys of every record q selects, in its order, read in
// pages of q.Limit (default 1000) by cursor: what a deletion of the
// matches collects before it deletes them.
func Keys(tx *Tx, table *Table, q Query) ([]string, error) {
	var keys []string
	q.Offset, q.Cursor, q.SkipTotal = 0, "", true
	q.Limit = cmp.Or(q.Limit, 1000)
	for {
		pg, err := tx.Page(table, q)
		if err != nil {
			return nil, err
		}
		for _, it := range pg.Items {
			keys = append(keys, it.Key)
		}
		if pg.Next == "" {
			return keys, nil
		}
		q.Cursor = pg.Next
	}
}

// PageOf is Tx.Page with the records decoded as T.
func PageOf[T any](tx *Tx, table *Table, q Query) (Page[T], error) {
	rp, err := tx.Page(table, q)
	if err != nil {
		return Page[T]{}, err
	}
	return decodePage[T](rp)
}

func (t *Tx) writeCheck(bucket, key string) error {
	if !t.writable {
		return ErrReadOnly
	}
	if err := validBucket(bucket); err != nil {
		return fmt.Errorf("bucket %q: %w", bucket, err)
	}
	if err := validKey(key); err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	return nil
}

// NextSeq returns the bucket's next sequence number (1, 2, ...), unique
// across every DB on the same storage.
func (t *Tx) NextSeq(bucket string) (uint64, error) {
	if err := t.writeCheck(bucket, "seq"); err != nil {
		return 0, err
	}
	n, err := t.e.NextSeq(bucket)
	return n, t.fail(err)
}

// Scan visits the entries o selects, in key order (descending when
// o.Reverse); fn returning ErrStop ends it without error. fn may write to
// the store; keys it adds ahead of the scan may or may not be visited.
// raw is valid only during fn.
func (t *Tx) Scan(bucket string, o ScanOptions, fn func(key string, raw []byte) error) error {
	if validBucket(bucket) != nil {
		return nil
	}
	for _, s := range []string{o.Prefix, o.Start} {
		if s != "" && validKey(s) != nil {
			return fmt.Errorf("scan bound %q: %w", s, ErrBadKey)
		}
	}
	var fnErr error
	err := t.e.Scan(bucket, o, func(k string, raw []byte) error {
		if err := fn(k, raw); err != nil {
			fnErr = err
			return ErrStop
		}
		return nil
	})
	if err != nil {
		return t.fail(err)
	}
	if errors.Is(fnErr, ErrStop) {
		return nil
	}
	return fnErr
}

// ForEach visits every entry of bucket in key order; ErrStop ends it early.
func (t *Tx) ForEach(bucket string, fn func(key string, raw []byte) error) error {
	return t.Scan(bucket, ScanOptions{}, fn)
}

// ForEachPrefix visits keys starting with prefix, in order.
func (t *Tx) ForEachPrefix(bucket, prefix string, fn func(key string, raw []byte) error) error {
	return t.Scan(bucket, ScanOptions{Prefix: prefix}, fn)
}

// Count is the number of keys in a bucket (0 on an engine failure, which
// fails the transaction).
func (t *Tx) Count(bucket string) int { return t.CountPrefix(bucket, "") }

// CountPrefix is the number of keys of bucket that start with prefix.
func (t *Tx) CountPrefix(bucket, prefix string) int {
	if validBucket(bucket) != nil || (prefix != "" && validKey(prefix) != nil) {
		return 0
	}
	n, err := t.e.Count(bucket, prefix)
	if t.fail(err) != nil {
		return 0
	}
	return n
}

// Publish sends payload on channel to every subscriber once the transaction
// commits; nothing is sent when it rolls back.
func (t *Tx) Publish(channel, payload string) error {
	if err := checkChannel(channel, payload); err != nil {
		return err
	}
	return t.fail(t.e.Notify(channel, payload))
}
