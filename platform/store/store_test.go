package store_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"deckhand/platform/store"
)

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
