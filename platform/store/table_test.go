package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform/store"
)

type item struct {
	Name string `json:"name"`
	N    int64  `json:"n"`
}

func itemTable(indexes ...store.Index) *store.Table {
	return store.Declare("items", []store.Field[item]{
		store.Text("name", func(r *item) string { return r.Name }),
		store.Int("n", func(r *item) int64 { return r.N }),
	}, indexes...)
}

// TestBoltDeclarationChangesAcrossReopen: a file declared one way and
// reopened with another declaration is rebuilt (rows and indexes), and a
// process that writes the bucket without declaring it is refused.
func TestBoltDeclarationChangesAcrossReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Declare(ctx, itemTable(store.Index{Fields: []string{"name"}, Sort: true})); err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *store.Tx) error {
		for i := range 30 {
			if err := tx.Put("items", fmt.Sprintf("i%02d", i), item{Name: fmt.Sprint("n", i%4), N: int64(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *store.Tx) error { return tx.Put("items", "x", item{}) }); !errors.Is(err, store.ErrUndeclared) {
		t.Fatalf("an undeclared write to a table: %v", err)
	}
	tb := itemTable(store.Index{Fields: []string{"n"}, Sort: true}, store.Index{Fields: []string{"name", "n"}})
	if err := db.Declare(ctx, tb); err != nil {
		t.Fatal(err)
	}
	pg, err := db.Page(ctx, tb, store.Query{Filters: []store.Filter{store.Where("name", store.Eq, "n1"), store.Where("n", store.Gt, 10)}, Sort: []string{"n"}, Desc: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range pg.Items {
		keys = append(keys, it.Key)
	}
	if pg.Total != 5 || strings.Join(keys, ",") != "i29,i25,i21,i17,i13" {
		t.Fatalf("after the rebuild: %d %v", pg.Total, keys)
	}
	// The engine's own buckets stay out of sight.
	err = db.View(func(tx *store.Tx) error {
		bs, err := tx.Buckets()
		for _, b := range bs {
			if strings.HasPrefix(b.Name, "\x1f") {
				t.Errorf("internal bucket %q listed", b.Name)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *store.Tx) error { return tx.Put("\x1fitems\x1frow", "k", 1) }); !errors.Is(err, store.ErrBadKey) {
		t.Fatalf("writing an internal bucket: %v", err)
	}
}

// TestPageKeysOutliveTheTransaction: the keys a page answers are the
// caller's own, whichever path found them (an index's entries, the rows
// in key order, matches sorted in memory): the file grows and is mapped
// anew after the page's transaction, and every key still reads the same.
func TestPageKeysOutliveTheTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb := itemTable(store.Index{Fields: []string{"name", "n"}, Sort: true})
	if err := db.Declare(ctx, tb); err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *store.Tx) error {
		for i := range 40 {
			if err := tx.Put("items", fmt.Sprintf("key-%02d", i), item{Name: fmt.Sprint("n", i%2), N: int64(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		q    store.Query
		want string
	}{
		{"index entries", store.Query{Filters: []store.Filter{store.Where("name", store.Eq, "n1")}, Sort: []string{"n"}, Limit: 3},
			"key-01,key-03,key-05"},
		{"rows in key order", store.Query{Filters: []store.Filter{store.Where("n", store.Gte, 37)}}, "key-37,key-38,key-39"},
		{"sorted in memory", store.Query{Filters: []store.Filter{store.Where("n", store.Lt, 3)}, Sort: []string{"name"}, Desc: true},
			"key-01,key-02,key-00"},
	}
	pages := make([]store.RawPage, len(cases))
	for i, c := range cases {
		if pages[i], err = db.Page(ctx, tb, c.q); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	big := strings.Repeat("x", 64<<10)
	for round := range 8 { // some MiB: the file is mapped anew as it grows
		err := db.Update(func(tx *store.Tx) error {
			for i := range 16 {
				if err := tx.Put("blobs", fmt.Sprintf("%d-%02d", round, i), big); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cases {
		var keys []string
		for _, it := range pages[i].Items {
			keys = append(keys, it.Key)
		}
		if got := strings.Join(keys, ","); got != c.want {
			t.Errorf("%s: keys %s after the file grew, want %s", c.name, got, c.want)
		}
	}
}
