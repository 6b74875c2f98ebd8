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
	"errors"
	"fmt"
	"strings"
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

// isInternal reports an engine bucket (hidden from Buckets).
func isInternal(name string) bool { return strings.HasPrefix(name, internalPrefix) }

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
