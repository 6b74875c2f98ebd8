package workspace_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/services/workspace"
)

// TestOpensAStoreOfTheHandBuiltIndex opens a store whose journal index is
// in hand-built buckets (postings: ws/term/seq → frequency, doclen:
// ws/seq → length, both raw big-endian integers), as agents' existing data
// may be, since an upgrade must keep it: the entries, blocks and questions
// it holds still list, a search ranks and scores them as a freshly written
// store does, and the hand-built buckets are gone.
func TestOpensAStoreOfTheHandBuiltIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	texts := []string{"alpha beta", "beta gamma gamma", "delta alpha alpha alpha", "Gamma ray"}
	at := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)

	path := filepath.Join(t.TempDir(), "store.db")
	old, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	u32 := func(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	err = old.Update(func(tx *store.Tx) error {
		var total int
		for _, text := range texts {
			seq, err := tx.NextSeq("journal")
			if err != nil {
				return err
			}
			key := store.SeqKey(seq)
			e := workspace.Entry{ID: "j_" + strings.TrimLeft(key, "0"), Content: text, Tags: []string{}, CreatedAt: at}
			if err := tx.Put("journal", "w/"+key, e); err != nil {
				return err
			}
			terms := strings.Fields(strings.ToLower(text))
			tf := map[string]int{}
			for _, term := range terms {
				tf[term]++
			}
			for term, n := range tf {
				if err := tx.PutRaw("postings", "w/"+term+"/"+key, u32(n)); err != nil {
					return err
				}
			}
			if err := tx.PutRaw("doclen", "w/"+key, u32(len(terms))); err != nil {
				return err
			}
			total += len(terms)
		}
		if err := tx.Put("jstats", "w", map[string]int{"docs": len(texts), "terms": total}); err != nil {
			return err
		}
		if err := tx.Put("blocks", "w/persona", workspace.Block{Label: "persona", Value: "terse", Limit: 100, Version: 1, CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		return tx.Put("questions", "w/"+store.SeqKey(1), workspace.Question{ID: "q_1", Text: "which?", Options: []string{}, Status: "open"})
	})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()

	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deps := platformtest.ServiceDeps(t, "workspace")
	deps.Store = db
	svc, err := workspace.New(deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := workspace.New(platformtest.ServiceDeps(t, "workspace"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		if _, err := fresh.Append(ctx, workspace.EntryAppend{WorkspaceRef: workspace.WorkspaceRef{Workspace: "w"}, Body: workspace.AppendEntry{Content: text}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"alpha", "gamma beta", "ray delta"} {
		in := workspace.SearchInput{WorkspaceRef: workspace.WorkspaceRef{Workspace: "w"}, Body: workspace.SearchRequest{Query: q, Limit: 10}}
		got, err := svc.Search(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.Search(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Hits) == 0 || len(got.Hits) != len(want.Hits) {
			t.Fatalf("search %q: %d hits on the upgraded store, %d on a fresh one", q, len(got.Hits), len(want.Hits))
		}
		for i := range got.Hits {
			if got.Hits[i].Content != want.Hits[i].Content || got.Hits[i].Score != want.Hits[i].Score {
				t.Fatalf("search %q hit %d: %q %v on the upgraded store, %q %v on a fresh one", q, i,
					got.Hits[i].Content, got.Hits[i].Score, want.Hits[i].Content, want.Hits[i].Score)
			}
		}
	}
	list, err := svc.Journal(ctx, workspace.JournalQuery{WorkspaceRef: workspace.WorkspaceRef{Workspace: "w"}, JournalFilter: workspace.JournalFilter{Limit: 3}})
	if err != nil || len(list.Entries) != 3 || list.Entries[0].Content != texts[3] || list.Next != list.Entries[2].ID {
		t.Fatalf("journal: %+v %v", list, err)
	}
	blocks, err := svc.Blocks(ctx, workspace.WorkspaceRef{Workspace: "w"})
	if err != nil || len(blocks.Blocks) != 1 || blocks.Blocks[0].Value != "terse" {
		t.Fatalf("blocks: %+v %v", blocks, err)
	}
	err = db.View(func(tx *store.Tx) error {
		if n := tx.Count("postings") + tx.Count("doclen"); n != 0 {
			t.Errorf("%d records left in the old index's buckets", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
