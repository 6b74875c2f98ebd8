package notes

import (
	"fmt"
	"testing"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the documents and the export
// tickets to the store contract on both engines, with the queries List
// and the ticket sweep ask.
func TestTablesKeepTheStoreContract(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	docs, tickets := map[string]any{}, map[string]any{}
	for i := range 30 {
		nb, node := fmt.Sprintf("nb%d", i%3), fmt.Sprintf("n%02d", i)
		docs[docKey(nb, node)] = Document{NotebookID: nb, NodeID: node, Title: "t", Version: 1,
			Blocks: []Block{{ID: "b1", Type: "text", Text: "x"}}, CreatedAt: t0, UpdatedAt: t0}
		tickets[ticketKey(fmt.Sprintf("tok%d", i))] = ticket{Notebook: nb, Node: node, ExpiresAt: t0.Add(time.Duration(i) * time.Minute)}
	}
	storetest.RunTablesOnEngines(t, []storetest.TableCase{
		{Table: docTable, Records: docs, Queries: []store.Query{
			{Limit: 7, SkipTotal: true},
			{Filters: []store.Filter{store.Where("notebook_id", store.Eq, "nb1")}, Limit: 4, SkipTotal: true},
			{Filters: []store.Filter{store.Where("notebook_id", store.Eq, "nb2"), store.Where("key", store.Gt, "nb2/n08")}, Limit: 3},
			{Filters: []store.Filter{store.Where("key", store.Gt, "nb0/n27")}, Limit: 5},
		}},
		{Table: ticketTable, Records: tickets, Queries: []store.Query{
			{Filters: []store.Filter{store.Where("expires_at", store.Lt, t0.Add(12*time.Minute))}, SkipTotal: true},
		}},
	})
}
