// Package pgstore is the PostgreSQL engine of package store, chosen by
// --database-url: several replicas share one database and nothing else.
//
// Update transactions are SERIALIZABLE and re-run, with jittered backoff,
// after a serialization failure or deadlock (SQLSTATE 40001, 40P01), so
// concurrent replicas stay exact without explicit locks; View transactions
// read one REPEATABLE READ snapshot and run once. The pool takes pgx's
// settings from the URL (pool_max_conns=N and the like); without
// pool_max_conns it holds up to poolMaxConns connections, not pgx's
// max(4, NumCPU), which queued every cache miss and every replica
// acknowledgement behind four connections under load. Migrations are embedded and
// applied at Open under an advisory lock; declared tables (store.Declare)
// are tables of their own with typed columns and indexes, migrated by
// DB.Declare under the same lock (table.go). Other buckets live in kv. JSON
// values live in a jsonb column, readable with psql:
//
//	SELECT key, event_type, container_id, created_at FROM events ORDER BY key DESC LIMIT 20;
//	SELECT key, value FROM kv WHERE bucket = 'sessions' ORDER BY key;
//
// A database that goes away while serving fails transactions with
// store.ErrUnavailable (nothing of them written); the pool dials again on
// the next transaction, so service resumes by itself when it returns.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"deckhand/platform/store"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maxAttempts bounds the re-runs of one conflicting transaction.
const maxAttempts = 60

// txTimeout bounds a transaction, re-runs included, whose context has no
// deadline: a database that stops answering (no reset, just silence) must
// not hold requests for the minutes TCP takes to notice.
const txTimeout = 30 * time.Second

// Open connects to the database at url (postgres://user:pass@host:port/db),
// applies pending migrations and returns the store. An unreachable or
// wrong url fails with an error naming the host and database, never the
// password.
func Open(ctx context.Context, url string) (*store.DB, error) {
	pool, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if _, err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, describe(pool.Config().ConnConfig, "migrate", err)
	}
	e := newEngine(pool)
	if err := e.loadCatalog(ctx); err != nil {
		pool.Close()
		return nil, describe(pool.Config().ConnConfig, "read the table catalog", err)
	}
	return store.New(e), nil
}

// Migrate applies pending migrations to the database at url and returns
// the names of those it applied (`deckhand-control migrate`).
func Migrate(ctx context.Context, url string) ([]string, error) {
	pool, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	applied, err := migrate(ctx, pool)
	if err != nil {
		return applied, describe(pool.Config().ConnConfig, "migrate", err)
	}
	return applied, nil
}

// connectTimeout bounds the first contact when ctx has no deadline.
const connectTimeout = 10 * time.Second

// poolMaxConns is the pool's size unless the URL sets pool_max_conns:
// enough for a busy replica's concurrent requests, while five replicas
// (each also holding one listening connection) stay under PostgreSQL's
// default max_connections of 100; set pool_max_conns for more replicas.
const poolMaxConns = 16

func connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgconn's parse errors already hide the password; be sure.
		return nil, fmt.Errorf("--database-url: %s", redact(err.Error(), url))
	}
	cfg.HealthCheckPeriod = 5 * time.Second
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = poolMaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, describe(cfg.ConnConfig, "connect", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, connectTimeout)
		defer cancel()
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, describe(cfg.ConnConfig, "connect", err)
	}
	return pool, nil
}

// describe names the server and database an error is about, without the
// password, on one line.
func describe(c *pgx.ConnConfig, op string, err error) error {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	msg := strings.Join(lines, " ")
	if c.Password != "" {
		msg = strings.ReplaceAll(msg, c.Password, "xxxxx")
	}
	return &startError{msg: fmt.Sprintf("PostgreSQL at host %s port %d, database %q, user %q: cannot %s: %s",
		c.Host, c.Port, c.Database, c.User, op, msg), cause: err}
}

// startError is store.ErrUnavailable with the server named.
type startError struct {
	msg   string
	cause error
}

func (e *startError) Error() string   { return e.msg }
func (e *startError) Unwrap() []error { return []error{store.ErrUnavailable, e.cause} }

func redact(msg, url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		rest := url[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 && colon+1 < at {
				msg = strings.ReplaceAll(msg, rest[colon+1:at], "xxxxx")
			}
		}
	}
	return msg
}

type engine struct {
	pool *pgxpool.Pool

	mu sync.RWMutex
	// cataloged are the buckets the database holds as tables.
	cataloged map[string]bool
	stmts     map[*store.Table]*tableSQL
}

func newEngine(pool *pgxpool.Pool) *engine {
	return &engine{pool: pool, cataloged: map[string]bool{}, stmts: map[*store.Table]*tableSQL{}}
}

// Location names the server and database, never the password.
func (e *engine) Location() string {
	c := e.pool.Config().ConnConfig
	return fmt.Sprintf("PostgreSQL at host %s port %d, database %q", c.Host, c.Port, c.Database)
}

// ConcurrentWriters: transactions run side by side on the server.
func (e *engine) ConcurrentWriters() bool { return true }

func (e *engine) Close() error {
	e.pool.Close()
	return nil
}

// Transactions' BEGIN statements.
const (
	beginSerializable = "BEGIN ISOLATION LEVEL SERIALIZABLE"
	beginLocking      = "BEGIN ISOLATION LEVEL READ COMMITTED"
	beginView         = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
)

// Update runs fn SERIALIZABLE, or READ COMMITTED when it takes row locks
// itself (store.UpdateOptions.Locking: every read that decides a write
// is a SELECT ... FOR UPDATE, so concurrent writers of one row queue on
// its lock instead of conflicting and re-running).
func (e *engine) Update(ctx context.Context, o store.UpdateOptions, fn func(store.EngineTx) error) error {
	begin := beginSerializable
	if o.Locking {
		begin = beginLocking
	}
	return e.run(ctx, begin, false, fn)
}

// View reads one snapshot. REPEATABLE READ READ ONLY never fails with a
// serialization error, so a View's function runs exactly once: only
// writers need the re-runs that SERIALIZABLE brings. Its BEGIN goes first,
// on its own, so a dead pooled connection is retried before fn runs.
func (e *engine) View(ctx context.Context, fn func(store.EngineTx) error) error {
	return e.run(ctx, beginView, true, fn)
}

// run runs fn in a transaction until it commits, fails for its own
// reasons, or conflicts maxAttempts times.
func (e *engine) run(parent context.Context, begin string, eager bool, fn func(store.EngineTx) error) error {
	ctx := parent
	if _, ok := parent.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, txTimeout)
		defer cancel()
	}
	backoff := time.Millisecond
	for attempt := 1; ; attempt++ {
		err := e.attempt(ctx, begin, eager, fn)
		if err == nil {
			return nil
		}
		if parent.Err() != nil {
			return parent.Err()
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: no answer within %v: %v", store.ErrUnavailable, txTimeout, err)
		}
		// A conflict re-runs fn; a connection that failed at BEGIN (for a
		// View before fn ran; an Update's fn is re-runnable) gets two more
		// tries on a fresh one.
		var de dbErr
		retry := conflict(err) || (errors.As(err, &de) && de.begin && unavailable(err) && attempt < 3)
		if !retry || attempt >= maxAttempts {
			return classify(err, attempt)
		}
		sleep := backoff/2 + rand.N(backoff)
		if backoff < 64*time.Millisecond {
			backoff *= 2
		}
		select {
		case <-time.After(sleep):
		case <-ctx.Done():
		}
	}
}

func (e *engine) attempt(ctx context.Context, begin string, eager bool, fn func(store.EngineTx) error) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return dbErr{err: err, begin: true}
	}
	defer conn.Release()
	p := &pipe{ctx: ctx, conn: conn, begin: begin}
	if eager {
		if _, err := conn.Exec(ctx, begin); err != nil {
			return dbErr{err: err, begin: true}
		}
		p.began = true
	}
	defer p.rollback(context.WithoutCancel(ctx))
	if err := fn(&pgTx{ctx: ctx, p: p, e: e}); err != nil {
		return err
	}
	return p.commit()
}

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
