package exec

import (
	"fmt"
	"testing"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the run history to the store
// contract on both engines, with the queries History and the restart ask.
func TestTablesKeepTheStoreContract(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	statuses := []string{StatusRunning, StatusQueued, StatusSucceeded, StatusFailed, StatusInterrupted}
	recs := map[string]any{}
	for i := range 40 {
		id := runKey(uint64(i + 1))
		recs[id] = Run{ID: id, Schedule: fmt.Sprintf("s%d", i%3), Trigger: "schedule", StartedAt: t0.Add(time.Duration(i*7%40) * time.Minute),
			Status: statuses[i%len(statuses)], Stdout: "out", Stderr: ""}
	}
	queries := []store.Query{
		{Desc: true, Limit: 50, SkipTotal: true},
		{Filters: []store.Filter{store.Where("schedule", store.Eq, "s1")}, Desc: true, Limit: 5},
		{Filters: []store.Filter{store.Where("schedule", store.Eq, "s2"), store.Where("status", store.Eq, StatusFailed)}, Desc: true, Limit: 3},
		{Filters: []store.Filter{store.Where("started_at", store.Gte, t0.Add(10*time.Minute)), store.Where("started_at", store.Lt, t0.Add(30*time.Minute))}, Desc: true, Limit: 10},
		{Filters: []store.Filter{store.Where("status", store.In, []string{StatusRunning, StatusQueued})}},
		{Limit: 4, SkipTotal: true},
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{{Table: runTable, Records: recs, Queries: queries}})
}
