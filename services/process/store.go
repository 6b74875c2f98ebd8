package process

import (
	"context"
	"log/slog"
	"sync"

	"deckhand/platform/store"
)

const bucketProcesses = "processes"

// stored is a record as the store keeps it.
type stored struct {
	Process
	SpecHash string `json:"spec_hash,omitempty"`
}

// recorder writes records in batches, one transaction for what queued
// while the previous one committed, so a burst of short runs does not pay
// one fsync each. put answers a channel closed once its write committed.
type recorder struct {
	db  *store.DB
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]*stored // nil: delete
	waiters []chan struct{}
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newRecorder(db *store.DB, log *slog.Logger) *recorder {
	r := &recorder{db: db, log: log, pending: map[string]*stored{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

func (r *recorder) put(rec stored) <-chan struct{} {
	return r.queue(rec.ID, &rec)
}

func (r *recorder) del(id string) { r.queue(id, nil) }

func (r *recorder) queue(id string, rec *stored) <-chan struct{} {
	ch := make(chan struct{})
	r.mu.Lock()
	select {
	case <-r.done:
		r.mu.Unlock()
		close(ch)
		return ch
	default:
	}
	r.pending[id] = rec
	r.waiters = append(r.waiters, ch)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return ch
}

func (r *recorder) loop() {
	defer close(r.done)
	for {
		select {
		case <-r.wake:
			r.flush()
		case <-r.stop:
			r.flush()
			return
		}
	}
}

func (r *recorder) flush() {
	r.mu.Lock()
	batch, waiters := r.pending, r.waiters
	r.pending, r.waiters = map[string]*stored{}, nil
	r.mu.Unlock()
	if len(batch) > 0 {
		err := r.db.Update(func(tx *store.Tx) error {
			for id, rec := range batch {
				var err error
				if rec == nil {
					err = tx.Delete(bucketProcesses, id)
				} else {
					err = tx.Put(bucketProcesses, id, rec)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			r.log.Error("process: records not written", "count", len(batch), "err", err)
		}
	}
	for _, w := range waiters {
		close(w)
	}
}

// close writes what is queued and stops.
func (r *recorder) close() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
	r.flush() // anything queued after the loop's last flush
}

// processTable is the records by process id, read whole at a start.
var processTable = store.Declare(bucketProcesses, []store.Field[stored]{})

// load declares the table (the recorder's writes come after it) and
// reads every record.
func (r *recorder) load() ([]stored, error) {
	if err := r.db.Declare(context.Background(), processTable); err != nil {
		return nil, err
	}
	var out []stored
	err := r.db.View(func(tx *store.Tx) error {
		recs, _, err := store.All[stored](tx, processTable, store.Query{})
		for _, rec := range recs {
			if rec.ID != "" {
				out = append(out, rec)
			}
		}
		return err
	})
	return out, err
}
