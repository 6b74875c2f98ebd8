package notes_test

import (
	"fmt"
	"strings"
	"testing"

	"deckhand/platform/platformtest"
	"deckhand/services/notes"
)

// BenchmarkNotesList measures a page of the node list (100 nodes, their
// blocks counted, not answered) out of 500 documents of 8 blocks, across
// notebooks after a cursor and within one notebook.
func BenchmarkNotesList(b *testing.B) {
	svc, err := notes.New(platformtest.ServiceDeps(b, "notes"), nil)
	if err != nil {
		b.Fatal(err)
	}
	blocks := make([]notes.Block, 8)
	for i := range blocks {
		blocks[i] = notes.Block{Type: "text", Text: strings.Repeat("word ", 40)}
	}
	for i := range 500 {
		in := notes.DocumentPut{NodeRef: notes.NodeRef{Notebook: fmt.Sprintf("nb%d", i%5), Node: fmt.Sprintf("n%04d", i)},
			Body: notes.PutDocument{Title: "t", Blocks: blocks}}
		if _, err := svc.Put(b.Context(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("page100", func(b *testing.B) {
		for b.Loop() {
			l, err := svc.List(b.Context(), notes.ListQuery{After: "nb1/n0001", Limit: 100})
			if err != nil || len(l.Nodes) != 100 {
				b.Fatal(len(l.Nodes), err)
			}
		}
	})
	b.Run("notebook100", func(b *testing.B) {
		for b.Loop() {
			l, err := svc.List(b.Context(), notes.ListQuery{Notebook: "nb3", Limit: 100})
			if err != nil || len(l.Nodes) != 100 {
				b.Fatal(len(l.Nodes), err)
			}
		}
	})
}
