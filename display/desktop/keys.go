package desktop

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"deckhand/platform/fault"
)

// Keysyms the service presses of its own accord (clearing a field).
const (
	KeyControlL Keysym = 0xffe3
	KeyDelete   Keysym = 0xffff
)

// keyNames maps canonical X keysym names to their values. Lookups are
// case-insensitive and ignore "_", "-" and spaces, so "Page_Up", "pageup"
// and "PAGE-UP" are the same key.
var keyNames = map[string]Keysym{
	"BackSpace": 0xff08, "Tab": 0xff09, "Linefeed": 0xff0a, "Clear": 0xff0b, "Return": 0xff0d,
	"Pause": 0xff13, "Scroll_Lock": 0xff14, "Sys_Req": 0xff15, "Escape": 0xff1b, "Delete": 0xffff,
	"Home": 0xff50, "Left": 0xff51, "Up": 0xff52, "Right": 0xff53, "Down": 0xff54,
	"Prior": 0xff55, "Next": 0xff56, "End": 0xff57, "Begin": 0xff58,
	"Select": 0xff60, "Print": 0xff61, "Execute": 0xff62, "Insert": 0xff63, "Undo": 0xff65,
	"Redo": 0xff66, "Menu": 0xff67, "Find": 0xff68, "Cancel": 0xff69, "Help": 0xff6a,
	"Break": 0xff6b, "Mode_switch": 0xff7e, "Num_Lock": 0xff7f,
	"KP_Space": 0xff80, "KP_Tab": 0xff89, "KP_Enter": 0xff8d, "KP_Home": 0xff95, "KP_Left": 0xff96,
	"KP_Up": 0xff97, "KP_Right": 0xff98, "KP_Down": 0xff99, "KP_Prior": 0xff9a, "KP_Next": 0xff9b,
	"KP_End": 0xff9c, "KP_Begin": 0xff9d, "KP_Insert": 0xff9e, "KP_Delete": 0xff9f, "KP_Equal": 0xffbd,
	"KP_Multiply": 0xffaa, "KP_Add": 0xffab, "KP_Separator": 0xffac, "KP_Subtract": 0xffad,
	"KP_Decimal": 0xffae, "KP_Divide": 0xffaf,
	"Shift_L": 0xffe1, "Shift_R": 0xffe2, "Control_L": 0xffe3, "Control_R": 0xffe4,
	"Caps_Lock": 0xffe5, "Shift_Lock": 0xffe6, "Meta_L": 0xffe7, "Meta_R": 0xffe8,
	"Alt_L": 0xffe9, "Alt_R": 0xffea, "Super_L": 0xffeb, "Super_R": 0xffec,
	"Hyper_L": 0xffed, "Hyper_R": 0xffee, "ISO_Level3_Shift": 0xfe03,
	"space": 0x20, "exclam": 0x21, "quotedbl": 0x22, "numbersign": 0x23, "dollar": 0x24,
	"percent": 0x25, "ampersand": 0x26, "apostrophe": 0x27, "parenleft": 0x28, "parenright": 0x29,
	"asterisk": 0x2a, "plus": 0x2b, "comma": 0x2c, "minus": 0x2d, "period": 0x2e, "slash": 0x2f,
	"colon": 0x3a, "semicolon": 0x3b, "less": 0x3c, "equal": 0x3d, "greater": 0x3e,
	"question": 0x3f, "at": 0x40, "bracketleft": 0x5b, "backslash": 0x5c, "bracketright": 0x5d,
	"asciicircum": 0x5e, "underscore": 0x5f, "grave": 0x60, "braceleft": 0x7b, "bar": 0x7c,
	"braceright": 0x7d, "asciitilde": 0x7e,
	"XF86MonBrightnessUp": 0x1008ff02, "XF86MonBrightnessDown": 0x1008ff03,
	"XF86AudioLowerVolume": 0x1008ff11, "XF86AudioMute": 0x1008ff12, "XF86AudioRaiseVolume": 0x1008ff13,
	"XF86AudioPlay": 0x1008ff14, "XF86AudioStop": 0x1008ff15, "XF86AudioPrev": 0x1008ff16,
	"XF86AudioNext": 0x1008ff17, "XF86HomePage": 0x1008ff18, "XF86Mail": 0x1008ff19,
	"XF86Search": 0x1008ff1b, "XF86Calculator": 0x1008ff1d, "XF86Back": 0x1008ff26,
	"XF86Forward": 0x1008ff27, "XF86Refresh": 0x1008ff29,
}

// keyAliases are the names people and other tools (xdotool, robotgo, the
// browser's KeyboardEvent.key) use for the same keys.
var keyAliases = map[string]string{
	"enter": "Return", "ret": "Return", "esc": "Escape", "bksp": "BackSpace", "del": "Delete",
	"ins": "Insert", "pageup": "Prior", "pgup": "Prior", "pagedown": "Next", "pgdn": "Next",
	"arrowup": "Up", "arrowdown": "Down", "arrowleft": "Left", "arrowright": "Right",
	"ctrl": "Control_L", "control": "Control_L", "lctrl": "Control_L", "rctrl": "Control_R",
	"shift": "Shift_L", "lshift": "Shift_L", "rshift": "Shift_R",
	"alt": "Alt_L", "option": "Alt_L", "lalt": "Alt_L", "ralt": "Alt_R", "altgr": "ISO_Level3_Shift",
	"meta": "Super_L", "super": "Super_L", "win": "Super_L", "windows": "Super_L", "cmd": "Super_L",
	"command": "Super_L", "os": "Super_L", "lsuper": "Super_L", "rsuper": "Super_R",
	"capslock": "Caps_Lock", "caps": "Caps_Lock", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock",
	"printscreen": "Print", "prtsc": "Print", "prtscr": "Print", "contextmenu": "Menu", "apps": "Menu",
	"spacebar": "space", "dash": "minus", "hyphen": "minus", "dot": "period", "backquote": "grave",
	"backtick": "grave", "quote": "apostrophe", "doublequote": "quotedbl", "pipe": "bar",
	"tilde": "asciitilde", "caret": "asciicircum", "hash": "numbersign", "pound": "numbersign",
	"volumeup": "XF86AudioRaiseVolume", "audiovolumeup": "XF86AudioRaiseVolume",
	"volumedown": "XF86AudioLowerVolume", "audiovolumedown": "XF86AudioLowerVolume",
	"volumemute": "XF86AudioMute", "mute": "XF86AudioMute", "audiovolumemute": "XF86AudioMute",
	"mediaplaypause": "XF86AudioPlay", "play": "XF86AudioPlay", "mediastop": "XF86AudioStop",
	"mediatracknext": "XF86AudioNext", "mediatrackprevious": "XF86AudioPrev",
	"browserback": "XF86Back", "browserforward": "XF86Forward", "browserrefresh": "XF86Refresh",
	"brightnessup": "XF86MonBrightnessUp", "brightnessdown": "XF86MonBrightnessDown",
}

var (
	keyIndex = map[string]Keysym{} // normalised name → keysym
	keyLabel = map[Keysym]string{} // keysym → canonical name
)

func init() {
	for name, sym := range keyNames {
		keyIndex[normKey(name)] = sym
		keyLabel[sym] = name
	}
	for i := 1; i <= 35; i++ {
		name := "F" + strconv.Itoa(i)
		sym := Keysym(0xffbe + i - 1)
		keyIndex[normKey(name)] = sym
		keyLabel[sym] = name
	}
	for i := 0; i <= 9; i++ {
		name := "KP_" + strconv.Itoa(i)
		sym := Keysym(0xffb0 + i)
		keyIndex[normKey(name)] = sym
		keyLabel[sym] = name
		keyIndex["numpad"+strconv.Itoa(i)] = sym
	}
	for alias, name := range keyAliases {
		sym, ok := keyNames[name]
		if !ok {
			panic("display: key alias " + alias + " names unknown key " + name)
		}
		keyIndex[normKey(alias)] = sym
	}
}

func normKey(s string) string {
	s = strings.ToLower(s)
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == ' ' {
			return -1
		}
		return r
	}, s)
}

// RuneKeysym is the keysym that types r: Latin-1 keysyms equal their code
// point, the rest of Unicode is 0x01000000+code point (X11 keysymdef).
func RuneKeysym(r rune) Keysym {
	switch r {
	case '\n', '\r':
		return 0xff0d
	case '\t':
		return 0xff09
	case '\b':
		return 0xff08
	case 0x1b:
		return 0xff1b
	}
	if (r >= 0x20 && r <= 0x7e) || (r >= 0xa0 && r <= 0xff) {
		return Keysym(r)
	}
	return Keysym(0x01000000 + r)
}

// KeyName is a readable name for sym.
func KeyName(sym Keysym) string {
	if n, ok := keyLabel[sym]; ok {
		return n
	}
	if sym >= 0x30 && sym <= 0x39 || sym >= 0x41 && sym <= 0x5a || sym >= 0x61 && sym <= 0x7a {
		return string(rune(sym))
	}
	if sym >= 0xa0 && sym <= 0xff {
		return string(rune(sym))
	}
	if sym >= 0x01000000 && sym <= 0x0110ffff {
		return string(rune(sym - 0x01000000))
	}
	return "0x" + strconv.FormatUint(uint64(sym), 16)
}

// ParseKey resolves a key name: an X keysym name ("Return", "Page_Up",
// "F5"), a common alias ("enter", "ctrl", "ArrowUp", "cmd"), a single
// character ("a", "A", "é", "€"), or a hex keysym ("0xff0d"). An unknown
// name is a 400 naming field and listing the closest known names.
func ParseKey(field, name string) (Keysym, error) {
	if name == "" {
		return 0, fault.Invalid(field, "is required")
	}
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		if unicode.IsPrint(r) || r == ' ' {
			return RuneKeysym(r), nil
		}
	}
	if sym, ok := keyIndex[normKey(name)]; ok {
		return sym, nil
	}
	if strings.HasPrefix(name, "0x") || strings.HasPrefix(name, "0X") {
		if v, err := strconv.ParseUint(name[2:], 16, 32); err == nil && v > 0 && v <= 0x1ffffff {
			return Keysym(v), nil
		}
	}
	matches := CloseKeyNames(name, 5)
	e := fault.Invalid(field, "unknown key name %q", name)
	if len(matches) > 0 {
		e.Message += "; did you mean " + strings.Join(matches, ", ") + "?"
		e = e.WithDetails("close matches: %s", strings.Join(matches, ", "))
	} else {
		e.Message += "; use an X keysym name (Return, Page_Up, F5), an alias (enter, ctrl, cmd) or one character"
	}
	return 0, e
}

// CloseKeyNames lists up to n known key names nearest to name (edit
// distance, then prefix), canonical X names first.
func CloseKeyNames(name string, n int) []string {
	q := normKey(name)
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	seen := map[string]bool{}
	add := func(label, norm string) {
		d := editDistance(q, norm)
		if strings.HasPrefix(norm, q) && len(q) >= 2 {
			d = min(d, 1)
		}
		limit := 2
		if len(q) >= 7 {
			limit = 3
		}
		if d <= limit && !seen[label] {
			seen[label] = true
			cands = append(cands, cand{label, d})
		}
	}
	for label := range keyNames {
		add(label, normKey(label))
	}
	for alias := range keyAliases {
		add(alias, normKey(alias))
	}
	for i := 1; i <= 35; i++ {
		add("F"+strconv.Itoa(i), "f"+strconv.Itoa(i))
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.name, b.name)) })
	out := make([]string, 0, n)
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.name)
	}
	return out
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// ParseChord resolves "ctrl+shift+t" style chords: the last part is the
// key, the others are modifiers. A lone "+" is the plus key.
func ParseChord(field, key string, modifiers []string) (Keysym, []Keysym, error) {
	parts := []string{key}
	if len(key) > 1 && strings.Contains(key, "+") {
		parts = strings.Split(key, "+")
		if parts[len(parts)-1] == "" { // "ctrl++"
			parts = append(parts[:len(parts)-2], "+")
		}
	}
	sym, err := ParseKey(field, parts[len(parts)-1])
	if err != nil {
		return 0, nil, err
	}
	var mods []Keysym
	for _, m := range parts[:len(parts)-1] {
		ms, err := ParseKey(field, m)
		if err != nil {
			return 0, nil, err
		}
		mods = append(mods, ms)
	}
	for i, m := range modifiers {
		ms, err := ParseKey(field[:max(0, strings.LastIndexByte(field, '.')+1)]+"modifiers["+strconv.Itoa(i)+"]", m)
		if err != nil {
			return 0, nil, err
		}
		mods = append(mods, ms)
	}
	return sym, mods, nil
}
