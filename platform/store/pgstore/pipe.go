package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipe runs one transaction's statements on a connection with as few
// round trips as the results allow: writes (whose only result is an
// error) wait in pending and travel with the next statement that returns
// rows, or with COMMIT; an Update's BEGIN travels with its first
// statement. A wallet transfer is then three round trips (BEGIN and the
// balance's SELECT ... FOR UPDATE; the idempotency key's read; the
// writes and COMMIT) where a statement each took ten.
//
// A write's error therefore surfaces at the next read or at commit; the
// store's contract already fails the whole transaction on any engine
// error, so nothing half-written commits either way.
type pipe struct {
	ctx     context.Context
	conn    *pgxpool.Conn
	begin   string // the BEGIN statement
	began   bool
	pending []pendingStmt
}

type pendingStmt struct {
	sql  string
	args []any
	// mapErr turns the statement's error into the store's (a unique
	// violation into a DuplicateError); nil keeps the driver's.
	mapErr func(error) error
}

// exec queues a statement whose only result is success.
func (p *pipe) exec(mapErr func(error) error, sql string, args ...any) {
	p.pending = append(p.pending, pendingStmt{sql: sql, args: args, mapErr: mapErr})
}

// send sends BEGIN (the first time), the pending statements and sql in
// one batch, and reads the pending results; the caller reads sql's.
func (p *pipe) send(sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	withBegin := !p.began
	if withBegin {
		b.Queue(p.begin)
	}
	pending := p.pending
	p.pending = nil
	for _, s := range pending {
		b.Queue(s.sql, s.args...)
	}
	b.Queue(sql, args...)
	br := p.conn.SendBatch(p.ctx, b)
	p.began = true
	if withBegin {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, dbErr{err: err, begin: true}
		}
	}
	for _, s := range pending {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			if s.mapErr != nil {
				if e := s.mapErr(err); e != nil {
					return nil, e
				}
			}
			return nil, dbErr{err: err}
		}
	}
	return br, nil
}

// Query runs sql after the pending writes; closing the rows ends the
// batch.
func (p *pipe) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, err := p.send(sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow runs sql after the pending writes when the row is scanned.
func (p *pipe) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	return &pipeRow{p: p, sql: sql, args: args}
}

type pipeRow struct {
	p    *pipe
	sql  string
	args []any
}

func (r *pipeRow) Scan(dest ...any) error {
	br, err := r.p.send(r.sql, r.args)
	if err != nil {
		return err
	}
	err = br.QueryRow().Scan(dest...)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

type batchRows struct {
	pgx.Rows
	br       pgx.BatchResults
	closed   bool
	closeErr error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.closeErr = r.br.Close()
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.closeErr
}

// commit sends the pending writes and COMMIT in one round trip; a
// transaction that never sent a statement has nothing to commit.
func (p *pipe) commit() error {
	if !p.began && len(p.pending) == 0 {
		return nil
	}
	br, err := p.send("COMMIT", nil)
	if err != nil {
		return err
	}
	_, err = br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return dbErr{err: err}
	}
	p.began = false
	return nil
}

// rollback ends a transaction that did not commit (best effort: a broken
// connection is discarded by the pool on release).
func (p *pipe) rollback(ctx context.Context) {
	if p.began {
		_, _ = p.conn.Exec(ctx, "ROLLBACK")
	}
}
