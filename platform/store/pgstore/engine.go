package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"deckhand/platform/store"

	"github.com/jackc/pgx/v5/pgxpool"
)

// maxAttempts bounds the re-runs of one conflicting transaction.
const maxAttempts = 60

// txTimeout bounds a transaction, re-runs included, whose context has no
// deadline: a database that stops answering (no reset, just silence) must
// not hold requests for the minutes TCP takes to notice.
const txTimeout = 30 * time.Second

type engine struct {
	pool *pgxpool.Pool

	mu sync.RWMutex
	// cataloged are the buckets the database holds as tables.
	cataloged map[string]bool
	stmts     map[*store.Table]*tableSQL
}

// tableSQL caches a table's upserts: of a JSON record (jsonb) and of
// exact bytes (raw).
type tableSQL struct {
	upsertJSON, upsertRaw string
}

func newEngine(pool *pgxpool.Pool) *engine {
	return &engine{pool: pool, cataloged: map[string]bool{}, stmts: map[*store.Table]*tableSQL{}}
}

func (e *engine) isTable(bucket string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.cataloged[bucket]
}

func (e *engine) tableNames() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []string
	for n := range e.cataloged {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
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

type pgTx struct {
	ctx context.Context
	p   *pipe
	e   *engine
}
