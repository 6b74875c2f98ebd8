package terminal

import (
	"strconv"
	"unicode/utf8"

	"github.com/hinshun/vt10x"
)

// vt10x keeps these private; the values are its glyph mode and cursor state bits.
const (
	glyphReverse   = 1 << 0
	glyphUnderline = 1 << 1
	glyphBold      = 1 << 2
	glyphItalic    = 1 << 4
	glyphBlink     = 1 << 5
	cursorWrapNext = 1 << 1
)

// redraw renders the model as output that puts a fresh terminal (xterm.js,
// or another VT parser) in the same state: full reset, the alternate screen
// if the model is on it, every cell with its attributes, then the modes
// that change how input and output behave, the pen, and the cursor. It is
// what a client gets on attach once the ring no longer holds the output
// that drew the screen. Not carried over: the scroll region, the saved
// cursor and, while the alternate screen is shown, the primary screen
// behind it (vt10x does not expose them).
func redraw(vt vt10x.Terminal) []byte {
	vt.Lock()
	defer vt.Unlock()
	cols, rows := vt.Size()
	mode := vt.Mode()
	cur := vt.Cursor()

	b := make([]byte, 0, rows*(cols+16)+256)
	b = append(b, "\x1bc\x1b[0m\x1b[H\x1b[2J"...)
	if t := vt.Title(); t != "" && utf8.ValidString(t) {
		b = append(b, "\x1b]2;"...)
		for _, r := range t {
			if r >= 0x20 && r != 0x7f {
				b = utf8.AppendRune(b, r)
			}
		}
		b = append(b, '\a')
	}
	if mode&vt10x.ModeAltScreen != 0 {
		b = append(b, "\x1b[?1049h\x1b[H\x1b[2J"...)
	}
	// Draw with wrap off so the last column never scrolls or wraps.
	b = append(b, "\x1b[?7l"...)
	pen := ""
	blank := vt10x.Glyph{Char: ' ', FG: vt10x.DefaultFG, BG: vt10x.DefaultBG}
	for y := 0; y < rows; y++ {
		// The clear left blanks: skip those at the end of the line.
		end := cols
		for end > 0 && (vt.Cell(end-1, y) == blank || vt.Cell(end-1, y) == vt10x.Glyph{FG: vt10x.DefaultFG, BG: vt10x.DefaultBG}) {
			end--
		}
		if end == 0 {
			continue
		}
		b = cup(b, 0, y)
		for x := 0; x < end; x++ {
			b, pen = drawCell(b, vt.Cell(x, y), pen)
		}
	}
	if mode&vt10x.ModeWrap != 0 {
		b = append(b, "\x1b[?7h"...)
		if cur.State&cursorWrapNext != 0 {
			// The cursor waits at the end of a line to wrap: print the last
			// cell again so the next character wraps here too.
			g := vt.Cell(cols-1, cur.Y)
			b = cup(b, cols-1, cur.Y)
			b = append(b, cellSGR(g)...)
			b = appendChar(b, g.Char)
			if erased(g) {
				// Erasing keeps the pending wrap.
				b = append(b, penSGR(g)...)
				b = append(b, "\x1b[X"...)
			}
		}
	}
	for _, m := range []struct {
		flag vt10x.ModeFlag
		on   string
	}{
		{vt10x.ModeAppCursor, "\x1b[?1h"},
		{vt10x.ModeAppKeypad, "\x1b="},
		{vt10x.ModeReverse, "\x1b[?5h"},
		{vt10x.ModeInsert, "\x1b[4h"},
		{vt10x.ModeCRLF, "\x1b[20h"},
		{vt10x.ModeMouseX10, "\x1b[?9h"},
		{vt10x.ModeMouseButton, "\x1b[?1000h"},
		{vt10x.ModeMouseMotion, "\x1b[?1002h"},
		{vt10x.ModeMouseMany, "\x1b[?1003h"},
		{vt10x.ModeMouseSgr, "\x1b[?1006h"},
		{vt10x.ModeFocus, "\x1b[?1004h"},
		{vt10x.ModeHide, "\x1b[?25l"},
	} {
		if mode&m.flag != 0 {
			b = append(b, m.on...)
		}
	}
	b = append(b, penSGR(cur.Attr)...)
	if cur.State&cursorWrapNext == 0 || mode&vt10x.ModeWrap == 0 {
		b = cup(b, cur.X, cur.Y)
	}
	return b
}

func cup(b []byte, x, y int) []byte {
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(y+1), 10)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(x+1), 10)
	return append(b, 'H')
}

func appendChar(b []byte, r rune) []byte {
	if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || !utf8.ValidRune(r) {
		r = ' '
	}
	return utf8.AppendRune(b, r)
}

// drawCell writes one cell and moves the cursor past it; pen is the SGR in
// force, returned updated.
func drawCell(b []byte, g vt10x.Glyph, pen string) ([]byte, string) {
	if erased(g) {
		// An erased cell holds the pen as it was, unlike a printed one: erase
		// it with that pen (ECH), then step over it.
		p := string(penSGR(g))
		if p != pen {
			b = append(b, p...)
		}
		return append(b, "\x1b[X\x1b[C"...), p
	}
	if p := cellSGR(g); p != pen {
		b = append(b, p...)
		pen = p
	}
	return appendChar(b, g.Char), pen
}

// erased tells a cell erased under a bold or reverse pen from a printed
// one: printing brightens a bold colour 0-7 and swaps the colours of a
// reversed cell, so a printed cell never holds those combinations.
func erased(g vt10x.Glyph) bool {
	if g.Char != ' ' || g.Mode&(glyphBold|glyphReverse) == 0 {
		return false
	}
	if g.Mode&glyphReverse != 0 {
		return g.FG == vt10x.DefaultFG || g.BG == vt10x.DefaultBG || (g.Mode&glyphBold != 0 && g.BG < 8)
	}
	return g.FG < 8
}

// cellSGR is the SGR that makes a parser store g's attributes. vt10x
// stores a cell's colours after applying bold-brightening and reverse
// video, so a reversed cell's colours are swapped back before the 7 that
// swaps them again.
func cellSGR(g vt10x.Glyph) string {
	if g.Mode&glyphReverse != 0 {
		g.FG, g.BG = g.BG, g.FG
	}
	return string(penSGR(g))
}

// penSGR is the SGR setting attributes and colours exactly as in g.
func penSGR(g vt10x.Glyph) []byte {
	b := []byte("\x1b[0")
	for _, a := range []struct {
		bit  int16
		code string
	}{{glyphBold, ";1"}, {glyphItalic, ";3"}, {glyphUnderline, ";4"}, {glyphBlink, ";5"}, {glyphReverse, ";7"}} {
		if g.Mode&a.bit != 0 {
			b = append(b, a.code...)
		}
	}
	b = sgrColor(b, g.FG, 30, 90, 38, vt10x.DefaultFG)
	b = sgrColor(b, g.BG, 40, 100, 48, vt10x.DefaultBG)
	return append(b, 'm')
}

func sgrColor(b []byte, c vt10x.Color, base, bright, ext int, def vt10x.Color) []byte {
	b = append(b, ';')
	switch {
	case c == def || c >= 1<<24:
		return strconv.AppendInt(b, int64(base+9), 10)
	case c < 8:
		return strconv.AppendInt(b, int64(base)+int64(c), 10)
	case c < 16:
		return strconv.AppendInt(b, int64(bright)+int64(c)-8, 10)
	case c < 256:
		b = strconv.AppendInt(b, int64(ext), 10)
		b = append(b, ";5;"...)
		return strconv.AppendInt(b, int64(c), 10)
	default:
		b = strconv.AppendInt(b, int64(ext), 10)
		b = append(b, ";2;"...)
		b = strconv.AppendInt(b, int64(c>>16&0xff), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(c>>8&0xff), 10)
		b = append(b, ';')
		return strconv.AppendInt(b, int64(c&0xff), 10)
	}
}
