package events

import (
	"deckhand/platform"
	"deckhand/platform/store"
)

// Log binds the event log to the control plane's store and clock. Domains
// that change state call Append inside their own Update; Record is for an
// event that accompanies no other write (a login, a bootstrap notice).
type Log struct {
	db    *store.DB
	clock platform.Clock
}

// NewLog returns the event log over db.
func NewLog(db *store.DB, clock platform.Clock) *Log {
	if clock == nil {
		clock = platform.SystemClock{}
	}
	return &Log{db: db, clock: clock}
}

// Append writes ev in tx, the transaction that makes the recorded change.
func (l *Log) Append(tx *store.Tx, ev Event) (Event, error) {
	return Append(tx, l.clock.Now(), ev)
}

// Record writes ev in a transaction of its own.
func (l *Log) Record(ev Event) (Event, error) {
	var out Event
	err := l.db.Update(func(tx *store.Tx) error {
		var err error
		out, err = Append(tx, l.clock.Now(), ev)
		return err
	})
	return out, err
}

// All returns every event, oldest first.
func (l *Log) All() ([]Event, error) {
	var out []Event
	err := l.db.View(func(tx *store.Tx) error {
		var err error
		out, err = List(tx)
		return err
	})
	return out, err
}
