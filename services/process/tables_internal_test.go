package process

import (
	"fmt"
	"testing"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the process records to the store
// contract on both engines: a start reads them whole.
func TestTablesKeepTheStoreContract(t *testing.T) {
	recs := map[string]any{}
	for i := range 12 {
		id := fmt.Sprintf("p_%02d", (i*5)%12)
		recs[id] = stored{Process: Process{ID: id, Cmd: []string{"sleep", "1"}}, SpecHash: fmt.Sprint(i)}
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{{Table: processTable, Records: recs, Queries: []store.Query{{}, {Limit: 5}}}})
}
