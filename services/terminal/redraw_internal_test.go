package terminal

import (
	"fmt"
	"testing"

	"github.com/hinshun/vt10x"
)

// A terminal fed the redraw of a model must end up in the model's state:
// every cell (character, rendering attributes, colours), the cursor (position, pen,
// pending wrap), visibility, the alternate screen and the input modes.
func TestRedrawReproducesTheModel(t *testing.T) {
	t.Parallel()
	const cols, rows = 40, 12
	cases := []struct{ name, input string }{
		{"plain lines", "hello\r\nworld\r\n$ "},
		{"attributes and colours", "\x1b[1;31mbold red\x1b[0m \x1b[7mreverse\x1b[27m \x1b[1;7;32;45mboth\x1b[0m " +
			"\x1b[3;4;5mital-under-blink\x1b[0m\r\n\x1b[38;5;200;48;5;17m256\x1b[38;2;10;200;30;48;2;250;128;1mrgb" +
			"\x1b[93;104mbright\x1b[0m\x1b[7m\x1b[2K\x1b[0mcleared-reversed\r\n\x1b(0lqqk\x1b(B € é 漢"},
		{"cursor pen, hidden cursor, modes", "\x1b[2J\x1b[5;7Hx\x1b[?25l\x1b[?1h\x1b=\x1b[?1000h\x1b[?1006h\x1b[?1004h\x1b[1;36;41m"},
		{"pending wrap at the last column", "\x1b[3;1H" + fmt.Sprintf("%040d", 7)},
		{"alternate screen", "primary\r\n\x1b[?1049h\x1b[H\x1b[2J\x1b[44m\x1b[12;38Halt\x1b[0m\x1b[1;1Hvim\x1b[?7l"},
		{"full screen drawn in every cell", func() string {
			s := ""
			for y := 1; y <= rows; y++ {
				s += fmt.Sprintf("\x1b[%d;1H\x1b[3%dm", y, y%8)
				for x := 0; x < cols; x++ {
					s += string(rune('a' + (x+y)%26))
				}
			}
			return s
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := vt10x.New(vt10x.WithSize(cols, rows))
			_, _ = model.Write([]byte(tc.input))
			copyVT := vt10x.New(vt10x.WithSize(cols, rows))
			_, _ = copyVT.Write(redraw(model))
			// The pen must carry on: what comes next lands the same way.
			next := []byte("next\x1b[0m!")
			_, _ = model.Write(next)
			_, _ = copyVT.Write(next)
			for y := 0; y < rows; y++ {
				for x := 0; x < cols; x++ {
					a, b := model.Cell(x, y), copyVT.Cell(x, y)
					if a.Char == 0 {
						a.Char = ' '
					}
					// The line-drawing charset and soft-wrap marks are
					// bookkeeping, not looks: the character is already mapped.
					a.Mode &^= 8 | 64
					b.Mode &^= 8 | 64
					if a != b {
						t.Fatalf("cell %d,%d: model %+v, redrawn %+v", x, y, a, b)
					}
				}
			}
			if a, b := model.Cursor(), copyVT.Cursor(); a.X != b.X || a.Y != b.Y || a.Attr != b.Attr || a.State != b.State {
				t.Fatalf("cursor: model %+v, redrawn %+v", a, b)
			}
			if model.CursorVisible() != copyVT.CursorVisible() {
				t.Fatal("cursor visibility differs")
			}
			if a, b := model.Mode(), copyVT.Mode(); a != b {
				t.Fatalf("modes: model %b, redrawn %b", a, b)
			}
		})
	}
}
