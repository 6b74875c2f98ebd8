package cron

import (
	"fmt"
	"testing"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the policies and the run records
// to the store contract on both engines, with the queries the service
// asks.
func TestTablesKeepTheStoreContract(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	statuses := []string{"queued", "running", "succeeded", "failed", "skipped", "interrupted"}
	runs := map[string]any{}
	for i := range 40 {
		id := store.SeqKey(uint64(i + 1))
		runs[id] = Run{ID: id, EntryID: fmt.Sprintf("e%d", i%4), Schedule: "* * * * *", Command: "true", Trigger: "schedule",
			Status: statuses[i%len(statuses)], StartedAt: t0.Add(time.Duration(i) * time.Minute)}
	}
	pols := map[string]any{}
	for i := range 9 {
		pols[fmt.Sprintf("e%d", i)] = Policy{Overlap: []string{"", "skip", "queue"}[i%3], Catchup: []string{"none", "all"}[i%2]}
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{
		{Table: policyTable, Records: pols, Queries: []store.Query{{}}},
		{Table: runTable, Records: runs, Queries: []store.Query{
			{Desc: true, Limit: 50, SkipTotal: true},
			{Filters: []store.Filter{store.Where("entry_id", store.Eq, "e2")}, Desc: true, Limit: 4, SkipTotal: true},
			{Filters: []store.Filter{store.Where("status", store.In, []string{"running", "queued"})}},
			{Limit: 3, SkipTotal: true},
		}},
	})
}
