package storetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

// Opener returns an empty store and a function that opens another handle
// on the same storage: a second replica (on an engine that allows one
// handle per storage, the same DB again). The test's cleanup closes both.
type Opener func(t testing.TB) (db *store.DB, another func() *store.DB)

// Engine is one store engine that tests run against.
type Engine struct {
	Name string
	Open Opener
}

// Engines are every engine: bbolt on a temporary file and PostgreSQL on a
// fresh database of the test binary's shared server (platformtest.Postgres).
// A domain's tests loop over them to run against both.
func Engines() []Engine {
	return []Engine{
		{"bbolt", func(t testing.TB) (*store.DB, func() *store.DB) {
			db, err := store.Open(filepath.Join(t.TempDir(), "store.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db, func() *store.DB { return db }
		}},
		{"postgres", func(t testing.TB) (*store.DB, func() *store.DB) {
			url := platformtest.Postgres(t)
			open := func() *store.DB {
				db, err := pgstore.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			return open(), open
		}},
	}
}

// Main is the TestMain of a package whose tests run on every engine: it
// runs them once per engine, with *engine set to the run's, stops the
// shared PostgreSQL and exits.
func Main(m *testing.M, engine *Engine) {
	code := 0
	for _, e := range Engines() {
		*engine = e
		if c := m.Run(); c != 0 {
			code = c
		}
	}
	platformtest.StopPostgres()
	os.Exit(code)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
