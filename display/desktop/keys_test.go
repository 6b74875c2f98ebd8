package desktop_test

import (
	"strings"
	"testing"

	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	ok := []struct {
		name string
		sym  desktop.Keysym
	}{
		{"Return", 0xff0d}, {"enter", 0xff0d}, {"ENTER", 0xff0d}, {"Page_Up", 0xff55}, {"pageup", 0xff55},
		{"PgDn", 0xff56}, {"ArrowLeft", 0xff51}, {"ctrl", 0xffe3}, {"cmd", 0xffeb}, {"F12", 0xffc9},
		{"a", 'a'}, {"A", 'A'}, {"é", 0xe9}, {"€", 0x010020ac}, {"+", '+'}, {" ", ' '}, {"0xff1b", 0xff1b},
		{"KP_5", 0xffb5}, {"numpad5", 0xffb5}, {"XF86AudioMute", 0x1008ff12}, {"volumeup", 0x1008ff13},
	}
	for _, c := range ok {
		got, err := desktop.ParseKey("key", c.name)
		if err != nil || got != c.sym {
			t.Errorf("ParseKey(%q) = %#x, %v; want %#x", c.name, got, err, c.sym)
		}
	}
	bad := []struct{ name, match string }{{"entr", "enter"}, {"Retrun", "Return"}, {"escap", "Escape"},
		{"F40", "F4"}, {"shfit", "shift"}}
	for _, c := range bad {
		_, err := desktop.ParseKey("key", c.name)
		e, isErr := err.(*fault.Error)
		if !isErr || e.Code != fault.CodeInvalid || !strings.Contains(e.Details, c.match) || !strings.HasPrefix(e.Message, "key: unknown key name") {
			t.Errorf("ParseKey(%q) = %v", c.name, err)
		}
	}
	if _, err := desktop.ParseKey("key", "zzzzzzzzzz"); err == nil || !strings.Contains(err.Error(), "use an X keysym name") {
		t.Errorf("no-match hint missing: %v", err)
	}
	sym, mods, err := desktop.ParseChord("key", "ctrl+shift+t", []string{"alt"})
	if err != nil || sym != 't' || len(mods) != 3 || mods[0] != 0xffe3 || mods[1] != 0xffe1 || mods[2] != 0xffe9 {
		t.Errorf("chord = %#x %v %v", sym, mods, err)
	}
	if sym, mods, err := desktop.ParseChord("key", "ctrl++", nil); err != nil || sym != '+' || len(mods) != 1 {
		t.Errorf("ctrl++ = %#x %v %v", sym, mods, err)
	}
}
