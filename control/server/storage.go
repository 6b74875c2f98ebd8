package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"deckhand/control/events"
	"deckhand/control/identity"
	"deckhand/control/images"
	"deckhand/control/notifications"
	"deckhand/control/projects"
	"deckhand/control/servers"
	"deckhand/control/wallet"
	"deckhand/platform/signing"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

// Storage: the embedded store (bbolt, <data>/control.db) by default, or
// PostgreSQL with --database-url, which several replicas may share. With
// PostgreSQL, everything replicas must agree on (sessions, tickets,
// one-time codes, idempotency keys, rate-limit counters, signing keys)
// lives in the database; --data keeps only local files (outgoing mail, the
// default master key file, regions.json).

// startTimeout bounds opening (and migrating) the database at start.
const startTimeout = 30 * time.Second

// validateDatabaseURL checks the form of --database-url without echoing
// it (it may hold a password).
func validateDatabaseURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return errors.New("--database-url: must be postgres://user:password@host:port/database")
	}
	if strings.Trim(u.Path, "/") == "" {
		return fmt.Errorf("--database-url: names no database (postgres://...@%s/<database>)", u.Host)
	}
	return nil
}

// Tables are every table the control plane's domains declare: the store
// creates or migrates them at every start (and `deckhand-control migrate`).
func Tables() []*store.Table {
	var out []*store.Table
	for _, ts := range [][]*store.Table{identity.Tables, events.Tables, wallet.Tables, images.Tables, projects.Tables, notifications.Tables, servers.Tables} {
		out = append(out, ts...)
	}
	return out
}

// declareTimeout bounds declaring the tables at start: a first start on a
// large store moves its buckets into their tables (on PostgreSQL out of
// kv, on bbolt its rows and indexes built), which takes minutes for
// millions of records.
const declareTimeout = 30 * time.Minute

// openStore opens the store the configuration names and declares every
// domain's tables. An unreachable or wrong database fails with an error
// naming host and database, never the password.
func (s *Server) openStore() (*store.DB, error) {
	var db *store.DB
	if s.cfg.DatabaseURL != "" {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		var err error
		if db, err = pgstore.Open(ctx, s.cfg.DatabaseURL); err != nil {
			return nil, fmt.Errorf("--database-url: %w", err)
		}
	} else {
		dbPath := filepath.Join(s.cfg.Data, "control.db")
		var err error
		db, err = store.Open(dbPath)
		if errors.Is(err, store.ErrLocked) {
			return nil, fmt.Errorf("%w (%s is locked; stop the other process or use another --data)", ErrDataInUse, dbPath)
		}
		if err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), declareTimeout)
	defer cancel()
	if err := db.Declare(ctx, Tables()...); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", db.Location(), err)
	}
	return db, nil
}

// openKeys opens the signing keys: in the database with --database-url
// (kept current from there by watchKeys), else under <data>/keys.
func (s *Server) openKeys() (*signing.KeySet, error) {
	if s.cfg.DatabaseURL != "" {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		return signing.OpenDB(ctx, s.db, s.sealer)
	}
	return signing.Open(KeysDir(s.cfg.Data), s.sealer)
}

// watchKeys follows rotations by any replica until Close.
func (s *Server) watchKeys() {
	if s.keys == nil || s.cfg.DatabaseURL == "" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.keys.Watch(ctx, s.log) }()
	s.stopWatch = func() { cancel(); <-done }
}

// Migrate applies the PostgreSQL migrations of databaseURL and returns the
// names applied (`deckhand-control migrate`).
func Migrate(ctx context.Context, databaseURL string) ([]string, error) {
	if databaseURL == "" {
		return nil, errors.New("--database-url: required (the embedded store needs no migrations)")
	}
	if err := validateDatabaseURL(databaseURL); err != nil {
		return nil, err
	}
	applied, err := pgstore.Migrate(ctx, databaseURL)
	if err != nil {
		return applied, fmt.Errorf("--database-url: %w", err)
	}
	db, err := pgstore.Open(ctx, databaseURL)
	if err != nil {
		return applied, fmt.Errorf("--database-url: %w", err)
	}
	defer db.Close()
	if err := db.Declare(ctx, Tables()...); err != nil {
		return applied, fmt.Errorf("--database-url: %w", err)
	}
	return applied, nil
}

// OpenStore opens the store of a --database-url, or of --data when the URL
// is empty: for commands beside a server (`keys rotate`).
func OpenStore(data, databaseURL string) (*store.DB, error) {
	s := &Server{cfg: Config{Data: data, DatabaseURL: databaseURL}}
	if err := validateDatabaseURL(databaseURL); err != nil {
		return nil, err
	}
	return s.openStore()
}
