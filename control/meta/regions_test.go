package meta_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/control/meta"
)

func TestLoadRegions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		content  *string // nil: no file
		optional bool
		first    string
		n        int
		errHas   string
	}{
		{"no file, optional", nil, true, "eu-central-1", len(meta.DefaultRegions), ""},
		{"no file, required", nil, false, "", 0, "no such file"},
		{"array", ptr(`[{"region":"r1","country":"NL","city":"Delft","available":true}]`), false, "r1", 1, ""},
		{"object", ptr(`{"regions":[{"region":"r1"},{"region":"r2","available":true}]}`), false, "r1", 2, ""},
		{"empty list", ptr(`[]`), false, "", 0, "lists no regions"},
		{"unknown field", ptr(`[{"region":"r1","zone":"a"}]`), false, "", 0, `unknown field "zone"`},
		{"wrong type", ptr(`[{"region":"r1","available":"yes"}]`), false, "", 0, "cannot unmarshal"},
		{"blank id", ptr(`[{"region":" "}]`), false, "", 0, "regions[0].region is empty"},
		{"duplicate", ptr(`[{"region":"a"},{"region":"a"}]`), false, "", 0, `"a" listed twice`},
		{"trailing data", ptr(`[{"region":"a"}] [1]`), false, "", 0, "unexpected data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "regions.json")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := meta.LoadRegions(path, tc.optional)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want one containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil || len(got) != tc.n || got[0].Region != tc.first {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

func ptr(s string) *string { return &s }
