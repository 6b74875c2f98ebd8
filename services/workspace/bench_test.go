package workspace_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"deckhand/platform/platformtest"
	"deckhand/services/workspace"
)

// BenchmarkJournal measures appending (indexing included) and a two-word
// BM25 search over 5000 entries of 12 words from a 2000-word vocabulary.
func BenchmarkJournal(b *testing.B) {
	svc, err := workspace.New(platformtest.ServiceDeps(b, "workspace"), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		w := make([]string, 12)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", rng.IntN(2000))
		}
		return strings.Join(w, " ")
	}
	b.Run("append", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.Append(ctx, workspace.EntryAppend{WorkspaceRef: workspace.WorkspaceRef{Workspace: "bench-append"}, Body: workspace.AppendEntry{Content: text()}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for range 5000 {
		if _, err := svc.Append(ctx, workspace.EntryAppend{WorkspaceRef: workspace.WorkspaceRef{Workspace: "bench"}, Body: workspace.AppendEntry{Content: text()}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("search-5000", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.Search(ctx, workspace.SearchInput{WorkspaceRef: workspace.WorkspaceRef{Workspace: "bench"}, Body: workspace.SearchRequest{Query: "w7 w42", Limit: 10}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
