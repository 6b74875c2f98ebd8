package images

import (
	"strings"
	"time"

	"deckhand/platform/store"
)

// imageTable is the catalog as a declared table: the public list's
// filter and sort fields are derived from each record and indexed, so a
// list is one store page (on PostgreSQL the table images). os,
// architecture and alias are lower-cased (the list matches them without
// case); price is in cents, rating the average in hundredths; search is
// what the search parameter matches.
var imageTable = store.Declare(bucketImages, []store.Field[imageRec]{
	store.Text("os", func(r *imageRec) string { return strings.ToLower(r.OS) }),
	store.Text("architecture", func(r *imageRec) string { return strings.ToLower(r.Architecture) }),
	store.Text("alias", func(r *imageRec) string { return strings.ToLower(r.Alias) }),
	store.Int("price", func(r *imageRec) int64 { return int64(r.Price) }),
	store.Int("rating", func(r *imageRec) int64 { return r.average() }),
	store.Time("added_date", func(r *imageRec) time.Time { return time.Unix(0, r.AddedNanos) }),
	store.Text("search", searchText),
},
	store.Index{Fields: []string{"alias"}, Sort: true},
	store.Index{Fields: []string{"added_date"}, Sort: true},
	store.Index{Fields: []string{"price"}, Sort: true},
	store.Index{Fields: []string{"rating"}, Sort: true},
	store.Index{Fields: []string{"os"}},
	store.Index{Fields: []string{"architecture"}},
)

// ownedTable is the users' libraries: an ownership per user and image,
// listed by user in the order the images entered the library.
var ownedTable = store.Declare(bucketOwned, []store.Field[ownership]{
	store.Text("user_id", func(o *ownership) string { return o.UserID }),
	store.Int("created_ns", func(o *ownership) int64 { return o.CreatedNs }),
}, store.Index{Fields: []string{"user_id", "created_ns"}, Sort: true})

// Tables are the tables this package declares.
var Tables = []*store.Table{imageTable, ownedTable}

// legacyBuckets held the hand-built indexes of an earlier layout (the
// list's entries, catalog version and change log; the library's entries
// by user and time); New drops them.
var legacyBuckets = []string{"image_index", "image_meta", "image_changes", "image_library"}

// searchText is what search matches: alias, image name, description and
// tags, lower-cased, separated by a byte no query contains (NUL, which no
// query contains either and a text field cannot hold, becomes a space).
func searchText(r *imageRec) string {
	parts := append([]string{r.Alias, r.ImageName, r.Description}, r.Tags...)
	return strings.ReplaceAll(strings.ToLower(strings.Join(parts, "\x1e")), "\x00", " ")
}

// likeLiteral escapes s for a like pattern: its wildcards match
// themselves.
func likeLiteral(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// sortKeys are the list's sort_by values (each a Sort index's field).
var sortKeys = []string{"alias", "added_date", "price", "rating"}
