package notifications

import (
	"testing"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the messages to the store contract
// on both engines, with the start's query (the newest keep).
func TestTablesKeepTheStoreContract(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	recs := map[string]any{}
	for i := range 15 {
		seq := uint64(i + 1)
		recs[key(seq)] = Message{Type: "notification", Seq: seq, Time: t0.Add(time.Duration(i) * time.Second),
			Notification: Notification{ID: key(seq)}}
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{{Table: messageTable, Records: recs, Queries: []store.Query{
		{Desc: true, Limit: 6, SkipTotal: true}, {Desc: true},
	}}})
}
