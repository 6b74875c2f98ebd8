package images_test

import (
	"fmt"
	"testing"
	"time"

	catpage "deckhand/control/catalog"
	"deckhand/control/catalogtest"
	"deckhand/control/images"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/store"
)

// TestLibraryOfAnEarlierLayout opens a store an earlier version wrote,
// whose libraries were a hand-built index (image_library: user/acquired
// time/image → image id) beside the ownerships: the libraries list as
// before, newest first and by pages, and the index's bucket is gone.
func TestLibraryOfAnEarlierLayout(t *testing.T) {
	// The images themselves, published by this version on another store
	// and copied over as records.
	src := newEnv(t)
	cat := catalog(t, src)
	imgs := map[string][]byte{}
	must[struct{}](t)(struct{}{}, src.db.View(func(tx *store.Tx) error {
		return tx.ForEach("images", func(k string, raw []byte) error {
			imgs[k] = append([]byte(nil), raw...)
			return nil
		})
	}))

	db, _ := engine.Open(t)
	t0 := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)
	owned := []struct {
		user, alias, how string
		at               time.Duration
	}{
		{"u1", "alpine", "import", 3 * time.Second}, {"u1", "debian", "purchase", time.Second},
		{"u1", "fedora", "import", 2 * time.Second}, {"u2", "alpine", "import", 0},
	}
	must[struct{}](t)(struct{}{}, db.Update(func(tx *store.Tx) error {
		for k, raw := range imgs {
			if err := tx.PutRaw("images", k, raw); err != nil {
				return err
			}
		}
		for _, o := range owned {
			id, at := cat[o.alias].ID, t0.Add(o.at)
			libKey := fmt.Sprintf("%s/%020d/%s", o.user, at.UnixNano(), id)
			rec := map[string]any{"image_id": id, "user_id": o.user, "acquired": o.how, "price_paid": "0.00", "created_ns": at.UnixNano(),
				"created_at": at.Format("2006-01-02T15:04:05.000Z"), "library_key": libKey}
			if err := tx.Put("image_owned", o.user+"/"+id, rec); err != nil {
				return err
			}
			if err := tx.Put("image_library", libKey, id); err != nil {
				return err
			}
		}
		return nil
	}))
	denv, _ := catalogtest.Env(t, "images", db, clockpkg.NewFakeClock(t0.Add(time.Hour)))
	svc, err := images.New(denv)
	if err != nil {
		t.Fatal(err)
	}
	aliases := func(l *images.UserList) []string {
		var out []string
		for _, im := range l.Images {
			out = append(out, im.Alias)
		}
		return out
	}
	lib := must[*images.UserList](t)(svc.Library(catalogtest.User("u1"), images.LibraryInput{}))
	if got := fmt.Sprint(aliases(lib)); got != "[alpine fedora debian]" || lib.Pagination.Total != 3 || lib.Images[2].Acquired != "purchase" {
		t.Fatalf("u1's library: %s %+v", got, lib.Pagination)
	}
	asc := must[*images.UserList](t)(svc.Library(catalogtest.User("u1"), images.LibraryInput{Page: catpage.Page{SortOrder: "asc", Limit: 2, Page: 2}}))
	if got := fmt.Sprint(aliases(asc)); got != "[alpine]" || asc.Pagination.TotalPages != 2 {
		t.Fatalf("u1's library, ascending, page 2: %s %+v", got, asc.Pagination)
	}
	if l := must[*images.UserList](t)(svc.Library(catalogtest.User("u2"), images.LibraryInput{})); fmt.Sprint(aliases(l)) != "[alpine]" {
		t.Fatalf("u2's library: %v", aliases(l))
	}
	must[struct{}](t)(struct{}{}, db.View(func(tx *store.Tx) error {
		if n := tx.Count("image_library"); n != 0 {
			t.Errorf("%d entries left in the library's old index", n)
		}
		return nil
	}))
}
