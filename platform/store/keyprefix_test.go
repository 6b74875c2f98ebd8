package store_test

import (
	"reflect"
	"testing"

	"deckhand/platform/store"
)

// TestKeyPrefix checks the range KeyPrefix makes, on the ends where the
// last rune cannot simply be raised.
func TestKeyPrefix(t *testing.T) {
	if fs := store.KeyPrefix(""); fs != nil {
		t.Fatalf("empty prefix: %v", fs)
	}
	for _, c := range []struct{ p, end string }{
		{"ws/", "ws0"},
		{"a\U0010FFFF", "b"},
		{"x\uD7FF", "x\uE000"},
		{"é", "ê"},
		{"\U0010FFFF", ""},
	} {
		fs := store.KeyPrefix(c.p)
		if !reflect.DeepEqual(fs[0], store.Where("key", store.Gte, c.p)) {
			t.Errorf("%q: lower bound %+v", c.p, fs[0])
		}
		switch {
		case c.end == "" && len(fs) != 1:
			t.Errorf("%q: an upper bound where none exists: %+v", c.p, fs)
		case c.end != "" && (len(fs) != 2 || !reflect.DeepEqual(fs[1], store.Where("key", store.Lt, c.end))):
			t.Errorf("%q: upper bound %+v, want lt %q", c.p, fs[1:], c.end)
		}
	}
}
