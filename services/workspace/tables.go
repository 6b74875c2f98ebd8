package workspace

import (
	"context"
	"fmt"
	"strings"

	"deckhand/platform/store"
)

// Every record of the service is keyed "workspace/..." in a declared
// table, so a workspace's records are one key range (store.KeyPrefix) and
// its lists are store.Page queries over it. The journal's BM25 index is a
// table of its own: one posting per (workspace, term, entry), keyed
// ws/term/seq, carrying the term's frequency in the entry and the entry's
// length, so a search reads one key range per query term.
var (
	blockTable    = store.Declare(bucketBlocks, []store.Field[Block]{})
	historyTable  = store.Declare(bucketHistory, []store.Field[Change]{store.Text("label", func(c *Change) string { return c.Label })})
	journalTable  = store.Declare(bucketJournal, []store.Field[Entry]{})
	postingTable  = store.Declare(bucketTerms, []store.Field[posting]{})
	skillTable    = store.Declare(bucketSkills, []store.Field[Skill]{})
	mcpTable      = store.Declare(bucketMCP, []store.Field[mcpRecord]{})
	questionTable = store.Declare(bucketQuestions, []store.Field[Question]{store.Text("status", func(q *Question) string { return q.Status })})
)

// posting is one entry's occurrences of one term: [frequency, the
// entry's length in terms].
type posting [2]uint32

// The buckets of the index the postings table replaces: term/entry →
// frequency and entry → length, as raw big-endian integers.
const (
	legacyPostings = "postings"
	legacyDocLen   = "doclen"
)

// declareTables declares the tables and, on a store an older version
// wrote, rebuilds the postings from the journal's entries and drops the
// buckets of the index they replace (jstats, the totals BM25 reads, is
// the same in both layouts).
func declareTables(ctx context.Context, db *store.DB) error {
	err := db.Declare(ctx, blockTable, historyTable, journalTable, postingTable, skillTable, mcpTable, questionTable)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	err = db.UpdateContext(ctx, func(tx *store.Tx) error {
		if tx.Count(legacyPostings) == 0 && tx.Count(legacyDocLen) == 0 {
			return nil
		}
		entries, keys, err := store.All[Entry](tx, journalTable, store.Query{})
		if err != nil {
			return err
		}
		for i, e := range entries {
			ws, seq, _ := strings.Cut(keys[i], "/")
			if err := putPostings(tx, ws, seq, e, +1); err != nil {
				return err
			}
		}
		for _, b := range []string{legacyPostings, legacyDocLen} {
			if err := tx.DropBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("workspace: rebuild the journal's index: %w", err)
	}
	return nil
}

// listOf decodes a workspace's records of table, in key order (reversed
// with desc), that pass filters.
func listOf[T any](tx *store.Tx, table *store.Table, ws string, desc bool, filters ...store.Filter) ([]T, error) {
	items, _, err := store.All[T](tx, table, store.Query{Filters: append(store.KeyPrefix(prefix(ws)), filters...), Desc: desc})
	if items == nil {
		items = []T{}
	}
	return items, err
}
