package images_test

import (
	"fmt"
	"testing"
	"time"

	"deckhand/control/images"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestLibraryTableKeepsTheStoreContract holds the ownerships (the users'
// libraries) to the store contract on this run's engine, with the
// library's queries.
func TestLibraryTableKeepsTheStoreContract(t *testing.T) {
	var owned *store.Table
	for _, tb := range images.Tables {
		if tb.Name == "image_owned" {
			owned = tb
		}
	}
	t0 := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)
	recs := map[string]any{}
	for i := range 24 {
		user, img := fmt.Sprintf("u%d", i%3), fmt.Sprintf("img_%024d", i)
		at := t0.Add(time.Duration(i*5%7) * time.Second) // ties in time, ordered by key
		recs[user+"/"+img] = map[string]any{"image_id": img, "user_id": user, "acquired": "import", "price_paid": "0.00",
			"created_ns": at.UnixNano(), "created_at": at.Format("2006-01-02T15:04:05.000Z")}
	}
	u1 := []store.Filter{store.Where("user_id", store.Eq, "u1")}
	storetest.RunTables(t, engine.Open, []storetest.TableCase{{Table: owned, Records: recs, Queries: []store.Query{
		{Filters: u1, Sort: []string{"created_ns"}, Desc: true, Limit: 3},
		{Filters: u1, Sort: []string{"created_ns"}, Offset: 2, Limit: 3},
		{Filters: u1, Sort: []string{"created_ns"}},
	}}})
}
