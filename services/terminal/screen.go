package terminal

import (
	"bytes"
	"cmp"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hinshun/vt10x"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The VT model parses a few MB/s, far slower than a PTY can deliver output,
// so it is kept off the hot path: each session's parseLoop consumes the ring
// at its own pace, woken after writes; the PTY reader and the clients never
// wait for it. When output outruns it (more than skipLag behind, or bytes it
// has not parsed are gone from the ring) the model restarts from a line
// start near the end of the ring and is marked approximate until something
// redraws the whole screen (see exactMarks) or a screenful of lines has
// been parsed. While it is that far behind it also pauses between chunks,
// so bulk output (cat of a large file) costs it a fraction of a core.
const (
	parseChunk = 64 << 10
	skipLag    = 256 << 10
	bulkPause  = 20 * time.Millisecond
)

// exactMarks redraw the whole screen: after one, the model no longer
// depends on output it skipped.
var exactMarks = [][]byte{
	[]byte("\x1b[2J"), []byte("\x1bc"),
	[]byte("\x1b[?1049h"), []byte("\x1b[?1047h"), []byte("\x1b[?47h"),
}

// screenGrid is a copy of the screen taken under the model's lock.
type screenGrid struct {
	cols, rows int
	cells      []vt10x.Glyph
	cursorX    int
	cursorY    int
	cursorOn   bool
	exact      bool
}

// parseLoop keeps the screen model current until the session ends. Idle, it
// holds no buffer and blocks on a channel.
func (s *Session) parseLoop() {
	for {
		select {
		case <-s.parseWake:
		case <-s.done:
			return
		}
		for {
			s.scrMu.Lock()
			lag := s.catchUp(parseChunk)
			s.scrMu.Unlock()
			if lag == 0 {
				break
			}
			if lag > skipLag/2 {
				t := time.NewTimer(bulkPause)
				select {
				case <-t.C:
				case <-s.done:
					t.Stop()
					return
				}
			}
		}
	}
}

// wakeParser tells parseLoop there is output; it never blocks.
func (s *Session) wakeParser() {
	select {
	case s.parseWake <- struct{}{}:
	default:
	}
}

// catchUp feeds the model output it has not seen, at most limit bytes
// (limit <= 0: all the output there was when it was called — not what a
// flooding shell writes meanwhile, which it would chase for seconds), and
// reports how many bytes are still unparsed. The caller holds scrMu.
func (s *Session) catchUp(limit int) int64 {
	done := 0
	target := int64(-1)
	for {
		s.mu.Lock()
		cols, rows := s.cols, s.rows
		oldest, total := s.ring.oldest(), s.ring.total
		if target < 0 && limit <= 0 {
			target = total
		}
		from := s.vtOffset
		restart := s.vt == nil || from < oldest || total-from > skipLag
		if restart {
			from = max(oldest, total-skipLag)
		}
		n := min(int(total-from), parseChunk)
		data := s.ring.span(from, n)
		s.mu.Unlock()

		if restart {
			s.vt = vt10x.New(vt10x.WithSize(cols, rows))
			s.vtCols, s.vtRows, s.vtCarry = cols, rows, nil
			s.vtExact, s.vtLines = from == 0, 0
			if from > 0 {
				// Start at a line so no escape sequence is split.
				if i := bytes.IndexByte(data, '\n'); i >= 0 {
					data = data[i+1:]
				}
			}
		}
		if s.vtCols != cols || s.vtRows != rows {
			s.vt.Resize(cols, rows)
			s.vtCols, s.vtRows = cols, rows
		}
		s.feed(data)
		if !s.vtExact {
			s.vtLines += bytes.Count(data, []byte{'\n'})
			if s.vtLines >= rows || containsAny(data, exactMarks) {
				s.vtExact = true
			}
		}
		s.vtOffset = from + int64(n)
		done += n
		if lag := total - s.vtOffset; lag == 0 || (limit > 0 && done >= limit) || (target >= 0 && s.vtOffset >= target) {
			return lag
		}
	}
}

func containsAny(b []byte, subs [][]byte) bool {
	for _, sub := range subs {
		if bytes.Contains(b, sub) {
			return true
		}
	}
	return false
}

func (s *Session) screen() screenGrid {
	s.scrMu.Lock()
	defer s.scrMu.Unlock()
	s.catchUp(0)

	cols, rows := s.vtCols, s.vtRows
	g := screenGrid{cols: cols, rows: rows, cells: make([]vt10x.Glyph, cols*rows), exact: s.vtExact}
	s.vt.Lock()
	for y := 0; y < rows; y++ {
		for x := 0; x < cols; x++ {
			g.cells[y*cols+x] = s.vt.Cell(x, y)
		}
	}
	cur := s.vt.Cursor()
	g.cursorX, g.cursorY, g.cursorOn = cur.X, cur.Y, s.vt.CursorVisible()
	s.vt.Unlock()
	return g
}

// feed writes output to the model, carrying an incomplete UTF-8 sequence
// over to the next call. vt10x is old code: a panic on odd input resets the
// model rather than taking the service down.
func (s *Session) feed(data []byte) {
	if len(s.vtCarry) > 0 {
		data = append(s.vtCarry, data...)
		s.vtCarry = nil
	}
	defer func() {
		if recover() != nil {
			s.vt = vt10x.New(vt10x.WithSize(s.vtCols, s.vtRows))
			s.vtCarry, s.vtExact = nil, false
		}
	}()
	// Hold back a rune cut at the end of the data for the next call.
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				s.vtCarry = append([]byte(nil), data[i:]...)
				data = data[:i]
			}
			break
		}
	}
	const chunk = 32 << 10
	for len(data) > 0 {
		n := min(len(data), chunk)
		// Cut on a rune boundary so the parser never sees half a rune.
		for n < len(data) && n > 0 && !utf8.RuneStart(data[n]) {
			n--
		}
		if n == 0 {
			n = min(len(data), chunk)
		}
		_, _ = s.vt.Write(data[:n])
		data = data[n:]
	}
}

// text renders the screen as lines without trailing blanks.
func (g screenGrid) text() string {
	var b strings.Builder
	b.Grow(g.rows * (g.cols + 1))
	for y := 0; y < g.rows; y++ {
		var line strings.Builder
		for x := 0; x < g.cols; x++ {
			r := cmp.Or(g.cells[y*g.cols+x].Char, ' ')
			line.WriteRune(r)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

var (
	defaultFG = color.RGBA{0xe5, 0xe5, 0xe5, 0xff}
	defaultBG = color.RGBA{0x12, 0x12, 0x12, 0xff}
)

// palette256 is the xterm palette.
var palette256 = func() [256]color.RGBA {
	var p [256]color.RGBA
	base := []uint32{0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd, 0xe5e5e5,
		0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff}
	for i, v := range base {
		p[i] = color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
	}
	steps := []uint8{0, 95, 135, 175, 215, 255}
	for i := 0; i < 216; i++ {
		p[16+i] = color.RGBA{steps[i/36], steps[(i/6)%6], steps[i%6], 0xff}
	}
	for i := 0; i < 24; i++ {
		v := uint8(8 + 10*i)
		p[232+i] = color.RGBA{v, v, v, 0xff}
	}
	return p
}()

func rgba(c vt10x.Color, def color.RGBA) color.RGBA {
	switch {
	case c >= vt10x.DefaultFG:
		return def
	case c < 256:
		return palette256[c]
	default:
		return color.RGBA{uint8(c >> 16), uint8(c >> 8), uint8(c), 0xff}
	}
}

// png renders the screen with the 7x13 bitmap font.
func (g screenGrid) png() ([]byte, error) {
	face := basicfont.Face7x13
	cw, ch := 7, 13
	img := image.NewRGBA(image.Rect(0, 0, g.cols*cw, g.rows*ch))
	draw.Draw(img, img.Bounds(), image.NewUniform(defaultBG), image.Point{}, draw.Src)
	d := font.Drawer{Dst: img, Face: face}
	var buf [4]byte
	for y := 0; y < g.rows; y++ {
		for x := 0; x < g.cols; x++ {
			cell := g.cells[y*g.cols+x]
			fg, bg := rgba(cell.FG, defaultFG), rgba(cell.BG, defaultBG)
			if cell.FG == vt10x.DefaultBG {
				fg = defaultBG
			}
			if cell.BG == vt10x.DefaultFG {
				bg = defaultFG
			}
			if g.cursorOn && x == g.cursorX && y == g.cursorY {
				fg, bg = bg, fg
			}
			rect := image.Rect(x*cw, y*ch, (x+1)*cw, (y+1)*ch)
			if bg != defaultBG {
				draw.Draw(img, rect, image.NewUniform(bg), image.Point{}, draw.Src)
			}
			if cell.Char == 0 || cell.Char == ' ' {
				continue
			}
			d.Src = image.NewUniform(fg)
			d.Dot = fixed.P(x*cw, y*ch+face.Ascent)
			n := utf8.EncodeRune(buf[:], cell.Char)
			d.DrawBytes(buf[:n])
		}
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&out, img); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
