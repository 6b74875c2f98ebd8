package events

import (
	"cmp"
	"context"
	"strings"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/store"
)

// Log binds the event log to the control plane's store and clock. Domains
// that change state call Append inside their own Update; Record is for an
// event that accompanies no other write (a login, a bootstrap notice).
type Log struct {
	db    *store.DB
	clock clockpkg.Clock
	batch *store.Batcher
}

// recordBatch caps how many events one group commit of Record carries.
const recordBatch = 128

// NewLog returns the event log over db. Lists need the log's table
// declared on db (Declare, or the server's declaration of every table).
func NewLog(db *store.DB, clock clockpkg.Clock) *Log {
	max := recordBatch
	if db.ConcurrentWriters() {
		max = -1 // PostgreSQL: appends insert new rows side by side, no batch to wait for
	}
	return &Log{db: db, clock: cmp.Or[clockpkg.Clock](clock, clockpkg.SystemClock{}), batch: store.NewBatcher(db, max, false)}
}

// Append writes ev in tx, the transaction that makes the recorded change.
func (l *Log) Append(tx *store.Tx, ev Event) (Event, error) {
	return Append(tx, l.clock.Now(), ev)
}

// Declare declares the log's table on its store (idempotent).
func (l *Log) Declare(ctx context.Context) error { return l.db.Declare(ctx, Tables...) }

// DropLegacyIndex removes the bucket of hand-built index entries an
// earlier layout kept beside the log (the declared table's indexes
// replace it). Nothing to do on a store that never had it.
func (l *Log) DropLegacyIndex(ctx context.Context) (bool, error) {
	var had bool
	err := l.db.UpdateContext(ctx, func(tx *store.Tx) error {
		had = false
		if err := tx.Scan(legacyIndexBucket, store.ScanOptions{Limit: 1}, func(string, []byte) error { had = true; return nil }); err != nil || !had {
			return err
		}
		return tx.DropBucket(legacyIndexBucket)
	})
	return had, err
}

// Record writes ev in a transaction of its own: on bbolt a group commit,
// so concurrent Records share one transaction (one fsync) instead of
// queueing for the single writer one commit each; on PostgreSQL each its
// own, concurrently.
func (l *Log) Record(ev Event) (Event, error) {
	var out Event
	err := l.batch.Update(func(tx *store.Tx) (err error) {
		out, err = Append(tx, l.clock.Now(), ev)
		return err
	})
	return out, err
}

// All returns every event, oldest first.
func (l *Log) All() ([]Event, error) {
	var out []Event
	err := l.db.View(func(tx *store.Tx) (err error) {
		out, err = List(tx)
		return err
	})
	return out, err
}

// DeleteBatchSize is how many events one deletion transaction removes:
// small enough that writers (who wait for bbolt's single writer) are not
// held up for long, large enough that a million deletions take seconds.
const DeleteBatchSize = 500

// DeleteMatching deletes every event f selects, in transactions of
// DeleteBatchSize, and returns the exact number deleted. Between batches
// other writers proceed; events appended meanwhile that match are
// deleted too when they sort after the point reached.
func (l *Log) DeleteMatching(ctx context.Context, f Filter) (int, error) {
	total, after := 0, ""
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, next := 0, ""
		err := l.db.UpdateContext(ctx, func(tx *store.Tx) (err error) {
			n, next, err = DeleteBatch(tx, f, after, DeleteBatchSize)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if next == "" {
			return total, nil
		}
		after = next
	}
}

// Expire deletes every event created before now minus days (the cleanup
// endpoint and the retention job).
func (l *Log) Expire(ctx context.Context, days int) (int, error) {
	cutoff := l.clock.Now().Add(-time.Duration(days) * 24 * time.Hour)
	return l.DeleteMatching(ctx, Filter{End: cutoff.Add(-time.Nanosecond)})
}

// Now is the log's clock reading.
func (l *Log) Now() time.Time { return l.clock.Now() }

// Store is the store the log writes to.
func (l *Log) Store() *store.DB { return l.db }

// MigrateKeys rewrites events stored under the sequence keys of the first
// log (before indexes) into the indexed layout, in batches; their ids
// change from evt_<n> to the time-ordered form. It returns how many it
// moved. Safe to run at every start: with nothing to move it reads one key.
func (l *Log) MigrateKeys(ctx context.Context) (int, error) {
	total := 0
	for {
		n := 0
		err := l.db.UpdateContext(ctx, func(tx *store.Tx) error {
			n = 0
			var old []string
			// Sequence keys are 20 digits without '-': they sort before
			// every time key of this century only by accident, so look at
			// the whole range of 20-digit keys.
			err := tx.Scan(Bucket, store.ScanOptions{Limit: DeleteBatchSize}, func(k string, _ []byte) error {
				if len(k) != 20 || strings.Contains(k, "-") {
					return store.ErrStop
				}
				old = append(old, k)
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range old {
				var ev Event
				if ok, err := tx.Get(Bucket, k, &ev); err != nil || !ok {
					return err
				}
				if err := tx.Delete(Bucket, k); err != nil {
					return err
				}
				if _, err := Append(tx, ev.CreatedAt, ev); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil || n == 0 {
			return total, err
		}
		total += n
	}
}
