package store_test

import (
	"context"
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

// Close twice returns, whether or not anything ever subscribed (test
// cleanups and deferred closes often both close one handle).
func TestCloseTwice(t *testing.T) {
	t.Parallel()
	for _, subscribe := range []bool{false, true} {
		db, err := store.Open(filepath.Join(t.TempDir(), "twice.db"))
		if err != nil {
			t.Fatal(err)
		}
		if subscribe {
			db.Subscribe(context.Background(), "c")
		}
		done := make(chan struct{})
		go func() { db.Close(); db.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("second Close hangs (subscribed %v)", subscribe)
		}
	}
}
