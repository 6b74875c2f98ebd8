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
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"deckhand/platform/store"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

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
	cfg.ConnConfig.ConnectTimeout = cmp.Or(cfg.ConnConfig.ConnectTimeout, 5*time.Second)
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
