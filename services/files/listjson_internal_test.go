package files

import (
	"encoding/json"
	"testing"
	"time"
)

// The hand-written listing encoder writes exactly what encoding/json
// writes, escapes included.
func TestListingJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	type plain Listing // no MarshalJSON
	l := Listing{Path: "/a<b>&\"c\"", Truncated: true, Entries: []Entry{
		{Name: "x", Path: "/x", Type: "file", Size: 12, Mode: "0644", Perm: "-rw-r--r--", Owner: "root", Group: "root",
			Modified: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC), ETag: `"1-2-3"`},
		{Name: "ü\n\t\x01", Path: "/ü", Type: "symlink", Mode: "0777", Perm: "Lrwxrwxrwx", Owner: "1000", Group: "g",
			UID: 1000, GID: 7, Modified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Target: "../y\u2028"},
	}}
	got, _ := json.Marshal(l)
	want, _ := json.Marshal(plain(l))
	if string(got) != string(want) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	empty, _ := json.Marshal(Listing{Path: "/", Entries: []Entry{}})
	if string(empty) != `{"path":"/","entries":[],"truncated":false}` {
		t.Fatalf("empty: %s", empty)
	}
}
