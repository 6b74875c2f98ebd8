package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"deckhand/platform/store"
)

// TestBatcherCommitsEachOnceAndIsolatesFailures: many concurrent callers
// of one Batcher all commit, each exactly once; a caller whose function
// fails gets its own error and writes nothing, and its neighbours in the
// batch still commit.
func TestBatcherCommitsEachOnceAndIsolatesFailures(t *testing.T) {
	t.Parallel()
	for _, max := range []int{-1, 1, 8, 128} {
		db, err := store.Open(filepath.Join(t.TempDir(), "b.db"))
		if err != nil {
			t.Fatal(err)
		}
		b := store.NewBatcher(db, max, false)
		boom := errors.New("refused")
		var wg sync.WaitGroup
		errs := make([]error, 64)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = b.Update(func(tx *store.Tx) error {
					var n int
					if _, err := tx.Get("c", "n", &n); err != nil {
						return err
					}
					if err := tx.Put("c", "n", n+1); err != nil {
						return err
					}
					if i%10 == 3 {
						_ = tx.Put("c", fmt.Sprint("failed", i), i)
						return boom
					}
					return tx.Put("c", fmt.Sprint("done", i), i)
				})
			}()
		}
		wg.Wait()
		want := 0
		for i, err := range errs {
			if i%10 == 3 {
				if !errors.Is(err, boom) {
					t.Fatalf("max %d: caller %d: %v, want its own error", max, i, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("max %d: caller %d: %v", max, i, err)
			}
			want++
		}
		err = db.View(func(tx *store.Tx) error {
			var n int
			_, _ = tx.Get("c", "n", &n)
			if n != want || tx.Count("c") != want+1 {
				t.Errorf("max %d: counter %d and %d keys, want %d and %d", max, n, tx.Count("c"), want, want+1)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}
