package workspace

import (
	"fmt"
	"testing"
	"time"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// TestTablesKeepTheStoreContract holds the service's tables to the store
// contract on both engines, with the key ranges and filters its lists and
// its search ask.
func TestTablesKeepTheStoreContract(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	blocks, history, journal, postings, skills, mcps, questions := map[string]any{}, map[string]any{}, map[string]any{},
		map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}
	for i := range 24 {
		ws := []string{"w", "w2", "w-3"}[i%3]
		name := fmt.Sprintf("x%02d", i)
		seq := store.SeqKey(uint64(i + 1))
		blocks[prefix(ws)+name] = Block{Label: name, Value: "v", Limit: 100, Version: 1, CreatedAt: t0}
		history[prefix(ws)+seq] = Change{ID: fmt.Sprintf("h_%d", i+1), Label: fmt.Sprintf("l%d", i%4), Action: "created", At: t0}
		journal[prefix(ws)+seq] = Entry{ID: entryID(uint64(i + 1)), Content: "c", Tags: []string{}, CreatedAt: t0}
		postings[prefix(ws)+[]string{"alpha", "beta"}[i%2]+"/"+seq] = posting{uint32(1 + i%3), uint32(5 + i%7)}
		skills[prefix(ws)+name] = Skill{Name: name, Version: 1, CreatedAt: t0}
		mcps[prefix(ws)+name] = mcpRecord{MCPServer: MCPServer{Name: name}}
		questions[prefix(ws)+seq] = Question{ID: fmt.Sprintf("q_%d", i+1), Text: "?", Options: []string{}, Status: []string{"open", "answered"}[i%2]}
	}
	inW := store.KeyPrefix(prefix("w"))
	cases := []storetest.TableCase{
		{Table: blockTable, Records: blocks, Queries: []store.Query{{Filters: inW}}},
		{Table: historyTable, Records: history, Queries: []store.Query{
			{Filters: inW, Desc: true, Limit: 3, SkipTotal: true},
			{Filters: append(inW, store.Where("label", store.Eq, "l2")), Desc: true},
		}},
		{Table: journalTable, Records: journal, Queries: []store.Query{
			{Filters: inW, Desc: true, Limit: 4, SkipTotal: true},
			{Filters: append(inW, store.Where("key", store.Lt, prefix("w")+store.SeqKey(13))), Desc: true, Limit: 3},
		}},
		{Table: postingTable, Records: postings, Queries: []store.Query{{Filters: store.KeyPrefix(prefix("w2") + "beta/")}}},
		{Table: skillTable, Records: skills, Queries: []store.Query{{Filters: inW}}},
		{Table: mcpTable, Records: mcps, Queries: []store.Query{{Filters: store.KeyPrefix(prefix("w-3"))}}},
		{Table: questionTable, Records: questions, Queries: []store.Query{{Filters: append(inW, store.Where("status", store.Eq, "open"))}}},
	}
	storetest.RunTablesOnEngines(t, cases)
}
