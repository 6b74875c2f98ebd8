package run

import (
	"path/filepath"

	"deckhand/platform/store"
)

// The declared tables: profiles by name, and sources by id with their
// name (the list's order, unique) and their directory (no two sources
// overlap) indexed.
var (
	profileTable = store.Declare(bucketProfiles, []store.Field[Profile]{})
	sourceTable  = store.Declare(bucketSources, []store.Field[storedSource]{
		store.Text("name", func(s *storedSource) string { return s.Name }),
		store.Text("dir", func(s *storedSource) string { return filepath.Clean(s.Dir) }),
	}, store.Index{Fields: []string{"name"}, Sort: true}, store.Index{Fields: []string{"dir"}})
)
