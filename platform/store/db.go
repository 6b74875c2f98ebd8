package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

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
