// Package store owns deckhand's persistence: one transaction API (get,
// multi-get, put, delete, ordered range scans both ways, sequences, counts,
// notifications) over named buckets, declared tables with indexes kept in
// the same transaction and one paging API over them (table.go, query.go),
// and the engines behind it. Domain code sees only DB and Tx; it never
// imports an engine's driver.
//
// Engines:
//   - bbolt (this package, Open): the embedded default, one file per side;
//   - PostgreSQL (package store/pgstore): chosen by --database-url, shared by
//     several replicas; Update transactions are serializable and re-run on
//     conflict, so an Update function may run more than once.
//
// Every request's reads and writes run in one transaction so checks and
// changes (balances, tickets, versions) commit together or not at all.
//
// The contract both engines keep (package store/storetest checks it):
//   - buckets and keys are non-empty UTF-8 without NUL, at most MaxKeyLen
//     bytes, and bucket names do not start with \x1f (the engines' own);
//     keys sort by their bytes on every engine;
//   - Put stores JSON; PutRaw stores bytes exactly as given; Get/GetRaw of a
//     Put value return equivalent JSON (PostgreSQL's jsonb may reorder
//     object keys and whitespace), of a PutRaw value the same bytes;
//   - an error from the engine inside a transaction (a lost database, a
//     serialization conflict) fails the whole transaction even when the
//     function ignored it: nothing half-written commits.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

var (
	// ErrLocked means another process holds the data file.
	ErrLocked = errors.New("data file is in use by another process")
	// ErrUnavailable means the database cannot be reached or kept
	// conflicting; nothing of the transaction was written. The host answers
	// 503: the request may be retried once the database is back.
	ErrUnavailable error = unavailableError{}
	// ErrReadOnly is returned by writes inside View.
	ErrReadOnly = errors.New("write in a read-only transaction")
	// ErrBadKey rejects a bucket or key outside the contract above.
	ErrBadKey = errors.New("store key must be 1 to 1024 bytes of UTF-8 without NUL")
	// ErrStop ends a scan early without error.
	ErrStop = errors.New("stop")
	// ErrDuplicate means a write broke a unique index; the transaction
	// fails as a whole (nothing of it is written).
	ErrDuplicate = errors.New("a unique index already holds these values")
	// ErrUndeclared refuses a write to a bucket this store holds as a
	// table when this process has not declared it (its indexes would go
	// stale).
	ErrUndeclared = errors.New("bucket is a declared table; declare it (DB.Declare) before writing")
)

// DuplicateError is the ErrDuplicate of one index.
type DuplicateError struct {
	Table, Index string
	// Fields are the index's fields.
	Fields []string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("table %s: another record has the same %s (unique index %s)", e.Table, strings.Join(e.Fields, ", "), e.Index)
}

func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// DuplicateFields names the unique index's fields (the error kernel
// answers 409 naming them).
func (e *DuplicateError) DuplicateFields() []string { return e.Fields }

// MaxKeyLen bounds bucket names and keys (PostgreSQL's btree limits index
// entries to about 2.7 kB; one limit for both engines keeps them equal).
const MaxKeyLen = 1024

// ScanOptions selects an ordered range of a bucket.
type ScanOptions struct {
	// Prefix restricts the scan to keys that start with it.
	Prefix string
	// Start is where the scan begins (inclusive): forward scans visit keys
	// >= Start, reverse scans keys <= Start. Empty means the range's end.
	Start string
	// Exclusive skips Start itself: resume a page after the last key seen.
	Exclusive bool
	// Reverse visits keys in descending byte order.
	Reverse bool
	// Limit caps the number of entries visited; 0 means no cap.
	Limit int
}

// Notification is one message received by Subscribe.
type Notification struct {
	Payload string
	// Gap means messages may have been lost (the listener reconnected or
	// the subscriber fell behind): drop whatever the messages keep fresh.
	Gap bool
}

// Engine is what a storage engine provides. Domain code never uses it; an
// engine package hands one to New.
type Engine interface {
	// Update runs fn in a read-write transaction and commits when it
	// returns nil; an engine may run fn again after a conflict.
	Update(ctx context.Context, o UpdateOptions, fn func(EngineTx) error) error
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(EngineTx) error) error
	// Publish sends payload on channel to every DB on the same storage.
	Publish(ctx context.Context, channel, payload string) error
	// Listen delivers every published message to deliver until ctx ends;
	// after a reconnect it delivers Gap on channel "" (every channel). It
	// calls ready once it first listens.
	Listen(ctx context.Context, deliver func(channel string, n Notification), ready func())
	// Declare creates or migrates the tables (rows, indexes) to these
	// declarations, moving records already in their buckets into them.
	Declare(ctx context.Context, tables []*Table) error
	Close() error
}

// UpdateOptions choose how an Update isolates itself on an engine with
// concurrent writers (PostgreSQL); bbolt has one writer at a time.
type UpdateOptions struct {
	// Locking runs at READ COMMITTED instead of SERIALIZABLE: the
	// function locks, with Tx.GetForUpdate, the rows whose values decide
	// its writes before reading anything else that does; writers of one
	// row then queue on its lock instead of conflicting and running again.
	Locking bool
}

// Row is a record's derived field values, for an engine's PutRow.
type Row struct {
	t    *Table
	vals []val
}

// Values are the row's values as Go values (string, int64, time.Time,
// nil), in the order of the table's Fields.
func (r Row) Values() []any { return r.t.goValues(r.vals) }

// PageResult is what an engine's Page returns: the page's records, the
// number of matches and whether any follow the page.
type PageResult struct {
	Items []Item
	Total int
	More  bool
}

// EngineTx is one engine transaction. Keys and buckets arrive validated.
type EngineTx interface {
	// Get returns the value or nil when the bucket or key is missing.
	Get(bucket, key string) ([]byte, error)
	// GetForUpdate is Get that also locks the row until the transaction
	// ends (a missing row locks nothing).
	GetForUpdate(bucket, key string) ([]byte, error)
	// GetMany returns the values of keys in their order, nil where the
	// bucket or key is missing. keys hold 1 to MaxKeysPerRead valid keys,
	// possibly repeated; a PostgreSQL engine reads them in one statement.
	GetMany(bucket string, keys []string) ([][]byte, error)
	// Put stores a value; json tells whether raw is the JSON of a Put.
	Put(bucket, key string, raw []byte, json bool) error
	Delete(bucket, key string) error
	Scan(bucket string, o ScanOptions, fn func(key string, raw []byte) error) error
	NextSeq(bucket string) (uint64, error)
	Count(bucket, prefix string) (int, error)
	// Notify publishes on channel when (and only when) the transaction commits.
	Notify(channel, payload string) error
	// PutRow stores a record of a declared table with its derived row,
	// keeping every index; ErrDuplicate (a *DuplicateError) when a unique
	// index refuses it.
	PutRow(t *Table, key string, raw []byte, json bool, row Row) error
	// DeleteRow removes a record of a declared table and its index entries.
	DeleteRow(t *Table, key string) error
	// Page answers a validated query over a declared table.
	Page(p *Plan) (PageResult, error)
	// CountBy counts the matches of p (its order and page ignored) by
	// the value of field p.Table.Fields[field], NULLs left out.
	CountBy(p *Plan, field int) (map[string]int, error)
	// DropBucket removes a bucket that is not a table, with its sequence.
	DropBucket(bucket string) error
}

// DB is an open store.
type DB struct {
	e      Engine
	hub    *hub
	mu     sync.Mutex // serialises Declare
	tables atomic.Pointer[map[string]*Table]
}

// New wraps an engine. Engine packages call it; domain code calls Open or
// the engine package's Open.
func New(e Engine) *DB {
	d := &DB{e: e, hub: newHub(e)}
	d.tables.Store(&map[string]*Table{})
	return d
}

// DeclareReplacing declares tables, then drops the buckets of an earlier
// layout that they replace (a domain's hand-built indexes), in one
// transaction; dropping a bucket that is gone already is no error. A
// domain calls it at start.
func (d *DB) DeclareReplacing(ctx context.Context, tables []*Table, replaced ...string) error {
	if err := d.Declare(ctx, tables...); err != nil {
		return err
	}
	return d.UpdateContext(ctx, func(tx *Tx) error {
		for _, b := range replaced {
			if err := tx.DropBucket(b); err != nil {
				return fmt.Errorf("drop %s: %w", b, err)
			}
		}
		return nil
	})
}

// Declare makes each table's bucket a declared table of this store,
// creating or migrating its rows and indexes (on PostgreSQL a real table,
// under the migration lock, records already in the bucket moved into
// it). It is idempotent and cheap when nothing changed, so every process
// that writes a table declares it at start. Declaring a name again with
// another declaration is refused.
func (d *DB) Declare(ctx context.Context, tables ...*Table) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := *d.tables.Load()
	var todo []*Table
	for _, t := range tables {
		if old, ok := cur[t.Name]; ok {
			if old.Fingerprint() != t.Fingerprint() {
				return fmt.Errorf("table %s is already declared differently on this store", t.Name)
			}
			continue
		}
		if !slices.ContainsFunc(todo, func(x *Table) bool { return x.Name == t.Name }) {
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := d.e.Declare(ctx, todo); err != nil {
		return err
	}
	next := make(map[string]*Table, len(cur)+len(todo))
	maps.Copy(next, cur)
	for _, t := range todo {
		next[t.Name] = t
	}
	d.tables.Store(&next)
	return nil
}

// declared is the table of this store named like t, when t is it.
func (d *DB) declared(t *Table) bool {
	x, ok := (*d.tables.Load())[t.Name]
	return ok && (x == t || x.Fingerprint() == t.Fingerprint())
}

// Page runs Tx.Page in a read transaction of its own.
func (d *DB) Page(ctx context.Context, t *Table, q Query) (RawPage, error) {
	var out RawPage
	err := d.ViewContext(ctx, func(tx *Tx) error {
		var err error
		out, err = tx.Page(t, q)
		if err == nil { // bbolt's bytes live only as long as the transaction
			for i := range out.Items {
				out.Items[i].Value = slices.Clone(out.Items[i].Value)
			}
		}
		return err
	})
	return out, err
}

// Location names where the data lives (a file path, or the PostgreSQL
// server and database without the password), for messages to operators.
func (d *DB) Location() string {
	if l, ok := d.e.(interface{ Location() string }); ok {
		return l.Location()
	}
	return "store"
}

// ConcurrentWriters reports whether the engine runs write transactions
// side by side (PostgreSQL) rather than one at a time (bbolt, where a
// group commit is what shares the cost of a commit).
func (d *DB) ConcurrentWriters() bool {
	c, ok := d.e.(interface{ ConcurrentWriters() bool })
	return ok && c.ConcurrentWriters()
}

// Close stops subscriptions and releases the engine.
func (d *DB) Close() error {
	d.hub.close()
	return d.e.Close()
}

// Update runs fn in a read-write transaction; an error from fn, or from the
// engine during fn, rolls everything back. On PostgreSQL fn runs again after
// a serialization conflict, so it must not act outside the transaction:
// assign results to variables it overwrites and defer side effects to
// Tx.AfterCommit.
func (d *DB) Update(fn func(tx *Tx) error) error { return d.UpdateContext(context.Background(), fn) }

// View runs fn once in a read-only transaction: a consistent snapshot.
func (d *DB) View(fn func(tx *Tx) error) error { return d.ViewContext(context.Background(), fn) }

// UpdateContext is Update bounded by ctx.
func (d *DB) UpdateContext(ctx context.Context, fn func(tx *Tx) error) error {
	return d.run(ctx, &UpdateOptions{}, fn)
}

// UpdateLocking is an Update whose function takes row locks itself
// (UpdateOptions.Locking): it must read with Tx.GetForUpdate, first, every
// record whose value decides what it writes, and write otherwise only
// records no concurrent transaction writes (new keys, or keys those locks
// guard). On PostgreSQL it runs at READ COMMITTED, so writers of one row
// queue on the lock instead of re-running after a serialization conflict;
// on bbolt it is Update.
func (d *DB) UpdateLocking(ctx context.Context, fn func(tx *Tx) error) error {
	return d.run(ctx, &UpdateOptions{Locking: true}, fn)
}

// ViewContext is View bounded by ctx.
func (d *DB) ViewContext(ctx context.Context, fn func(tx *Tx) error) error {
	return d.run(ctx, nil, fn)
}

// run runs fn in a View (o nil) or an Update with options o.
func (d *DB) run(ctx context.Context, o *UpdateOptions, fn func(tx *Tx) error) error {
	write := o != nil
	if err := ctx.Err(); err != nil {
		return err
	}
	var last *Tx
	body := func(et EngineTx) error {
		last = &Tx{e: et, ctx: ctx, writable: write, tables: *d.tables.Load()}
		err := fn(last)
		if last.err != nil {
			return last.err // the engine failed under fn: never commit
		}
		return err
	}
	var err error
	if write {
		err = d.e.Update(ctx, *o, body)
	} else {
		err = d.e.View(ctx, body)
	}
	if err != nil {
		return err
	}
	for _, f := range last.after {
		f()
	}
	return nil
}

// Publish sends payload on channel now, to every subscriber of every DB on
// the same storage (every replica on PostgreSQL). Delivery is at most once;
// subscribers learn of possible losses through Notification.Gap.
func (d *DB) Publish(ctx context.Context, channel, payload string) error {
	if err := checkChannel(channel, payload); err != nil {
		return err
	}
	return d.e.Publish(ctx, channel, payload)
}

// Subscribe receives what is published on channel until ctx ends or the DB
// closes; then the returned channel is closed. The first subscription waits
// (at most a few seconds) until the engine listens, so what is published
// after Subscribe returns arrives.
func (d *DB) Subscribe(ctx context.Context, channel string) <-chan Notification {
	return d.hub.subscribe(ctx, channel)
}

// Notifier is what replicas use to tell each other of changes (credential
// cache invalidation, signing-key rotation); *DB is one.
type Notifier interface {
	Publish(ctx context.Context, channel, payload string) error
	Subscribe(ctx context.Context, channel string) <-chan Notification
}

var _ Notifier = (*DB)(nil)

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
	if validBucket(bucket) != nil || validKey(key) != nil {
		return false, nil
	}
	raw, err := t.e.Get(bucket, key)
	if err != nil {
		return false, t.fail(err)
	}
	if raw == nil {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
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
	if validBucket(bucket) != nil || validKey(key) != nil {
		return false, nil
	}
	raw, err := t.e.GetForUpdate(bucket, key)
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
	if q.Limit == 0 {
		q.Limit = 1000
	}
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
	if q.Limit == 0 {
		q.Limit = 1000
	}
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

// SeqKey renders a sequence number as a sortable key.
func SeqKey(n uint64) string {
	return fmt.Sprintf("%020d", n)
}

// internalPrefix starts the names of an engine's own buckets (a table's
// rows and indexes on bbolt, its catalog); domain code cannot name them.
const internalPrefix = "\x1f"

func validBucket(s string) error {
	if strings.HasPrefix(s, internalPrefix) {
		return ErrBadKey
	}
	return validKey(s)
}

func validKey(s string) error {
	if s == "" || len(s) > MaxKeyLen || !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return ErrBadKey
	}
	return nil
}

// MaxPayload bounds a notification (PostgreSQL's NOTIFY takes under 8000
// bytes, channel name included).
const MaxPayload = 7000

func checkChannel(channel, payload string) error {
	if validKey(channel) != nil || len(channel) > 63 {
		return fmt.Errorf("channel %q must be 1 to 63 bytes of UTF-8 without NUL", channel)
	}
	if strings.IndexByte(channel, '\n') >= 0 {
		return fmt.Errorf("channel %q must not contain a newline", channel)
	}
	if len(payload) > MaxPayload || !utf8.ValidString(payload) || strings.IndexByte(payload, 0) >= 0 {
		return fmt.Errorf("notification payload must be at most %d bytes of UTF-8 without NUL", MaxPayload)
	}
	return nil
}

// unavailableError is ErrUnavailable. Its Unavailable method is how the
// error kernel (platform/fault, which imports nothing of ours) tells a lost
// database from an internal failure.
type unavailableError struct{}

func (unavailableError) Error() string     { return "the database is unavailable" }
func (unavailableError) Unavailable() bool { return true }
