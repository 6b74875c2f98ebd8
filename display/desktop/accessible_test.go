package desktop_test

import (
	"testing"

	"deckhand/display/desktop"
)

func TestElementIDRoundTrips(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ bus, path, id string }{
		{":1.42", "/org/a11y/atspi/accessible/12", "1.42~12"},
		{":1.5", "/org/a11y/atspi/accessible/root", "1.5~root"},
		{":1.7", "/org/chromium/a11y/3", "1.7~_L29yZy9jaHJvbWl1bS9hMTF5LzM"},
		{":1.7", "/org/a11y/atspi/accessible/a/b", "1.7~_L29yZy9hMTF5L2F0c3BpL2FjY2Vzc2libGUvYS9i"},
	} {
		if got := desktop.ElementID(c.bus, c.path); got != c.id {
			t.Errorf("ElementID(%s, %s) = %s, want %s", c.bus, c.path, got, c.id)
		}
		bus, path, err := desktop.ParseElementID(c.id)
		if err != nil || bus != c.bus || path != c.path {
			t.Errorf("ParseElementID(%s) = %s %s %v", c.id, bus, path, err)
		}
	}
	for _, bad := range []string{"", "~", "1.2", "a.b~3", "1.2~", "1.2~x/y", "1.2~_!!", "1.2~_YWJj"} {
		if _, _, err := desktop.ParseElementID(bad); err == nil {
			t.Errorf("ParseElementID(%q) accepted", bad)
		}
	}
}
