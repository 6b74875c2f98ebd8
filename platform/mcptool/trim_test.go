package mcptool_test

import (
	"strings"
	"testing"

	"deckhand/platform/mcptool"
)

func TestTrimText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		s           string
		offset, max int
		text        string
		next, total int
		wantsMarker bool
	}{
		{"fits", "hello", 0, 10, "hello", 0, 5, false},
		{"trimmed", "abcdefghij", 0, 4, "abcd", 4, 10, true},
		{"from an offset to the end", "abcdefghij", 6, 4, "ghij", 0, 10, false},
		{"runes are not cut", "ééééé", 1, 2, "éé", 3, 5, true},
		{"offset past the end", "abc", 9, 4, "", 0, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mcptool.Trim(tc.s, tc.offset, tc.max)
			body, marker, _ := strings.Cut(p.Text, "\n[trimmed")
			if body != tc.text || p.Next != tc.next || p.Total != tc.total || (marker != "") != tc.wantsMarker {
				t.Fatalf("mcptool.Trim(%q, %d, %d) = %+v", tc.s, tc.offset, tc.max, p)
			}
			if tc.wantsMarker && !strings.Contains(p.Text, "offset=") {
				t.Fatalf("the marker does not say where to read on: %q", p.Text)
			}
		})
	}
}
