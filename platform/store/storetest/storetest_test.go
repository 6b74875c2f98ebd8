package storetest_test

import (
	"testing"
	"time"

	"deckhand/platform/store"

	"deckhand/platform/store/storetest"
)

// TestContract holds every engine to the store contract. bbolt's "other
// replica" is the same handle (one process opens a file once); PostgreSQL's
// is a second pool on the same database.
func TestContract(t *testing.T) {
	for _, e := range storetest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, e.Open)
		})
	}
}

// TestRunTables runs the domain tables' suite over the contract's own
// table, so the suite itself is checked on both engines.
func TestRunTables(t *testing.T) {
	recs := map[string]any{}
	for k, r := range storetest.TableRecords(60) {
		recs[k] = r
	}
	at := time.Date(2026, 5, 1, 12, 20, 0, 0, time.UTC)
	queries := []store.Query{
		{},
		{Filters: []store.Filter{store.Where("tag", store.Eq, "x")}, Sort: []string{"n"}},
		{Filters: []store.Filter{store.Where("tag", store.Eq, nil)}, Desc: true, Limit: 7},
		{Filters: []store.Filter{store.Where("n", store.In, []int{1, 2, 3})}, Sort: []string{"name"}, Desc: true},
		{Filters: []store.Filter{store.AnyOf(store.Where("at", store.Eq, nil), store.Where("at", store.Gt, at))}, Limit: 9, SkipTotal: true},
		{Filters: append(store.KeyPrefix("k001"), store.Where("key", store.Ne, "k0012"))},
		{Filters: []store.Filter{store.Where("key", store.In, []string{"k0001", "k0002", "k0003"}),
			store.Where("key", store.In, []string{"k0002", "k0003", "k0004"})}},
		{Sort: []string{"at"}, Offset: 5, Limit: 10},
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{{Table: storetest.ContractTable("domain"), Records: recs, Queries: queries}})
}
