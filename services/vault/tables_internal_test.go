package vault

import (
	"fmt"
	"testing"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the keys to the store contract on
// both engines, with the queries the list, the counts and the sweep ask.
func TestTablesKeepTheStoreContract(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	recs := map[string]any{}
	for i := range 40 {
		k := fmt.Sprintf("%s.k%02d", []string{"app", "db", "app-x"}[i%3], i)
		m := Meta{Key: k, Version: 1, CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(i*13%40) * time.Second), Size: 10 + i%5}
		if i%4 == 0 {
			exp := t0.Add(time.Duration(i) * time.Minute)
			m.ExpiresAt = &exp
		}
		recs[k] = stored{Meta: m, Sealed: "sealed"}
	}
	now := t0.Add(17 * time.Minute)
	queries := []store.Query{
		{Filters: append(store.KeyPrefix("app."), live(now)), Limit: 5, SkipTotal: true},
		{Filters: []store.Filter{live(now), store.Where("key", store.Gt, "app.k12")}, Limit: 6, SkipTotal: true},
		{Filters: []store.Filter{store.Where("expires_at", store.Gt, now)}, Limit: 1},
		{Filters: []store.Filter{live(now), store.Where("updated_at", store.Eq, t0.Add(39*time.Second))}},
		{Filters: []store.Filter{store.Where("expires_at", store.Lte, now)}},
		{},
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{{Table: keyTable, Records: recs, Queries: queries}})
}
