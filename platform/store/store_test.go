package store_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"deckhand/platform/store"
)

func open(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type rec struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

func TestPutGetRollback(t *testing.T) {
	t.Parallel()
	db := open(t)
	if err := db.Update(func(tx *store.Tx) error { return tx.Put("b", "k", rec{"a", 1}) }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := db.Update(func(tx *store.Tx) error {
		if err := tx.Put("b", "k", rec{"changed", 2}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	var got rec
	_ = db.View(func(tx *store.Tx) error {
		ok, err := tx.Get("b", "k", &got)
		if !ok || err != nil {
			t.Fatalf("get: %v %v", ok, err)
		}
		return nil
	})
	if got != (rec{"a", 1}) {
		t.Fatalf("rolled-back write leaked: %+v", got)
	}
}

func TestMissingBucketReadsEmpty(t *testing.T) {
	t.Parallel()
	db := open(t)
	_ = db.View(func(tx *store.Tx) error {
		var r rec
		if ok, err := tx.Get("nope", "k", &r); ok || err != nil {
			t.Fatalf("missing bucket: %v %v", ok, err)
		}
		if tx.Count("nope") != 0 {
			t.Fatal("count of missing bucket")
		}
		return tx.ForEach("nope", func(string, []byte) error { t.Fatal("visited"); return nil })
	})
}

func TestSequencesAndPrefixOrder(t *testing.T) {
	t.Parallel()
	db := open(t)
	var keys []string
	_ = db.Update(func(tx *store.Tx) error {
		for i := 0; i < 12; i++ {
			n, err := tx.NextSeq("s")
			if err != nil {
				return err
			}
			if err := tx.Put("s", "p:"+store.SeqKey(n), rec{N: int(n)}); err != nil {
				return err
			}
		}
		return tx.Put("s", "q:other", rec{})
	})
	_ = db.View(func(tx *store.Tx) error {
		return tx.ForEachPrefix("s", "p:", func(k string, _ []byte) error { keys = append(keys, k); return nil })
	})
	if len(keys) != 12 || keys[0] != "p:"+store.SeqKey(1) || keys[11] != "p:"+store.SeqKey(12) {
		t.Fatalf("keys out of order: %v", keys)
	}
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
