package store_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestContract holds the bbolt engine to the store contract. One process
// opens a bbolt file once, so the "other replica" is the same handle.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (*store.DB, func() *store.DB) {
		db, err := store.Open(filepath.Join(t.TempDir(), "x.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db, func() *store.DB { return db }
	})
}

func TestSecondOpenFailsFast(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lock.db")
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	_, err = store.Open(path)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("want ErrLocked, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("second open took %v", time.Since(start))
	}
}
