package pgstore

import (
	"errors"
	"fmt"
	"strings"

	"deckhand/platform/store"

	"github.com/jackc/pgx/v5/pgconn"
)

// dbErr marks an error as the driver's (not the transaction function's).
type dbErr struct {
	err   error
	begin bool // BEGIN failed: the function never ran
}

func (e dbErr) Error() string { return e.err.Error() }

func (e dbErr) Unwrap() error { return e.err }

// conflict reports a serialization failure or deadlock: run it again.
func conflict(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40001" || pg.Code == "40P01")
}

// unavailable reports that the database went away or refused service, as
// opposed to an error in the statement or in the transaction function. The
// server's own errors carry a SQLSTATE; every other driver error (dial,
// reset, EOF, a closed connection) is the connection's.
func unavailable(err error) bool {
	var de dbErr
	if !errors.As(err, &de) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) { // connection exception, shutdown, too many clients, database gone
		return strings.HasPrefix(pg.Code, "08") || strings.HasPrefix(pg.Code, "57P") ||
			pg.Code == "53300" || pg.Code == "3D000"
	}
	return true
}

// classify turns a final driver error into store.ErrUnavailable when the
// database is gone or kept conflicting; a function's own error passes.
func classify(err error, attempts int) error {
	switch {
	case conflict(err):
		return fmt.Errorf("%w: transaction still conflicted after %d attempts: %v", store.ErrUnavailable, attempts, err)
	case unavailable(err):
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return err
}
