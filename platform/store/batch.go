package store

import (
	"context"
	"errors"
	"sync"
)

// Batcher is a group commit: while one transaction commits, the
// functions that arrive queue up, and the next transaction runs all of
// them (up to max) and commits once. On bbolt a commit is an fsync, so 64
// waiting writers cost one fsync instead of 64; no caller waits for a
// timer, a lone function commits at once. The wallet's transfers and the
// event log's Record use one each.
//
// Every queued function runs inside the one transaction, in arrival order,
// each seeing the writes of those before it (two transfers with one key
// in one batch: the second replays the first). A function that fails
// aborts the whole transaction, so nothing of any member is written; the
// failed member then runs alone (its error is its own answer, from a
// transaction that wrote nothing) and the others run again together.
// Functions must be safe to re-run: they overwrite their results on every
// run and act outside the store only through Tx.AfterCommit.
type Batcher struct {
	db      *DB
	max     int
	locking bool

	mu      sync.Mutex
	queue   []*call
	running bool
}

type call struct {
	fn   func(*Tx) error
	done chan error
}

// NewBatcher group-commits Updates on db, at most max functions per
// transaction: 1 commits them one at a time in arrival order, below 1
// gives each its own concurrent transaction (no group commit). With
// locking the transactions are UpdateLocking ones (the functions lock
// what they read for writing).
func NewBatcher(db *DB, max int, locking bool) *Batcher {
	return &Batcher{db: db, max: max, locking: locking}
}

func (b *Batcher) update(fn func(*Tx) error) error {
	if b.locking {
		return b.db.UpdateLocking(context.Background(), fn)
	}
	return b.db.Update(fn)
}

// Update runs fn in a shared transaction and returns once it committed
// (nil) or failed (fn's error, from a transaction that wrote nothing).
func (b *Batcher) Update(fn func(*Tx) error) error {
	if b.max < 1 {
		return b.update(fn) // no group commit: every request its own transaction, concurrently
	}
	c := &call{fn: fn, done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	return <-c.done
}

func (b *Batcher) loop() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), b.max)
		batch := append([]*call(nil), b.queue[:n]...)
		b.queue = b.queue[n:]
		b.mu.Unlock()
		b.run(batch)
	}
}

// errMember marks a batch aborted by one member's error.
var errMember = errors.New("a batch member failed")

func (b *Batcher) run(batch []*call) {
	for len(batch) > 0 {
		if len(batch) == 1 {
			c := batch[0]
			c.done <- b.update(c.fn)
			return
		}
		failed, memberErr := -1, error(nil)
		err := b.update(func(tx *Tx) error {
			failed, memberErr = -1, nil
			for i, c := range batch {
				if err := c.fn(tx); err != nil {
					failed, memberErr = i, err
					return errMember
				}
			}
			return nil
		})
		switch {
		case err == nil:
			for _, c := range batch {
				c.done <- nil
			}
			return
		case errors.Is(err, errMember) && failed >= 0:
			_ = memberErr
			// The member runs alone (it may pass now: a replayed key, a
			// balance a member before it had not yet spent does not
			// matter, its own transaction decides); the rest retry.
			c := batch[failed]
			c.done <- b.update(c.fn)
			batch = append(batch[:failed:failed], batch[failed+1:]...)
		default:
			// The engine failed the whole transaction: every member gets
			// its own, so each answer is its own.
			for _, c := range batch {
				c.done <- b.update(c.fn)
			}
			return
		}
	}
}
