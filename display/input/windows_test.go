package input_test

import (
	"testing"

	"deckhand/display/input"
)

func TestParseWindowID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint32{"123": 123, "0x20000c": 0x20000c, "0X1f": 31} {
		if got, err := input.ParseWindowID("windowId", in); err != nil || got != want {
			t.Errorf("%s = %d %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "abc", "-1", "0x", "99999999999"} {
		if _, err := input.ParseWindowID("windowId", in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
