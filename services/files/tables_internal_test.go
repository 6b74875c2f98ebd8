package files

import (
	"fmt"
	"testing"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the resumable uploads to the store
// contract on both engines, with the sweep's query.
func TestTablesKeepTheStoreContract(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	recs := map[string]any{}
	for i := range 20 {
		id := fmt.Sprintf("up_%02d", i)
		recs[id] = storedUpload{Upload: Upload{ID: id, Path: "/tmp/x", Created: t0}, TempName: ".x" + id, Touched: t0.Add(time.Duration(i*7%20) * time.Hour)}
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{{Table: uploadTable, Records: recs, Queries: []store.Query{
		{Filters: []store.Filter{store.Where("touched", store.Lt, t0.Add(9*time.Hour))}},
	}}})
}
