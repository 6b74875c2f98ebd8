package terminal_test

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/hinshun/vt10x"
)

// replayed is the terminal a client ends up with: a fresh VT fed what the
// client received.
func replayed(out string, cols, rows int) vt10x.Terminal {
	vt := vt10x.New(vt10x.WithSize(cols, rows))
	_, _ = vt.Write([]byte(out))
	return vt
}

// vtText renders a VT's screen as the screenshot's format=text does.
func vtText(vt vt10x.Terminal) string {
	cols, rows := vt.Size()
	var b strings.Builder
	for y := 0; y < rows; y++ {
		var line strings.Builder
		for x := 0; x < cols; x++ {
			r := vt.Cell(x, y).Char
			if r == 0 {
				r = ' '
			}
			line.WriteRune(r)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

func (e *env) screenText(t testing.TB, id string) (string, http.Header) {
	t.Helper()
	code, b, hdr := e.do(t, http.MethodGet, "/api/v1/terminal/screenshot?id="+id+"&format=text", nil)
	if code != http.StatusOK {
		t.Fatalf("screenshot: %d %s", code, b)
	}
	return string(b), hdr
}

// A full screen drawn after more output than the ring holds must come back
// to a client attaching later, cell for cell: the bytes that drew it may be
// long gone from the ring in a real session (an editor opened an hour ago).
func TestReattachAfterCutRedrawsTheScreen(t *testing.T) {
	t.Parallel()
	const cols, rows = 100, 30
	e := newEnv(t, nil, nil)
	s := e.create(t, map[string]any{"shell": "/bin/sh", "cols": cols, "rows": rows})
	c := e.dial(t, "?id="+s.ID, nil)
	// 1.6 MB of lines, then a screen drawn with absolute moves: markers in
	// the corners (the bottom right one ends in the last column), coloured
	// bold text in the middle, the cursor parked and hidden. The markers are
	// built from variables so the echoed command line never shows them.
	c.send(t, "a=TOP; b=LEFT; yes 'filler 0123456789 abcdefghijklmnopqrstuvwxyz' | head -c 1600000; "+
		"printf '\\033[2J\\033[1;1H%s-%s\\033[30;92HBOT-%s\\033[15;40H\\033[1;31;44mMID-%s\\033[0m\\033[10;10H\\033[?25l' $a $b RIGHT DLE; "+
		"sleep 600\n")
	want := map[[2]int]string{{0, 0}: "TOP-LEFT", {91, 29}: "BOT-RIGHT", {39, 14}: "MID-DLE"}
	var shot string
	eventually(t, "the final screen in the screenshot", func() bool {
		shot, _ = e.screenText(t, s.ID)
		lines := strings.Split(shot, "\n")
		return len(lines) > 14 && lines[0] == "TOP-LEFT" && strings.HasSuffix(lines[29], "BOT-RIGHT") && strings.Contains(lines[14], "MID-DLE")
	})
	if _, hdr := e.screenText(t, s.ID); hdr.Get("X-Terminal-Screen-Exact") != "true" {
		t.Fatalf("screen after a full clear reported inexact: %v", hdr)
	}
	if info, _ := e.session(t, s.ID); info.OutputBytes < 1600000 {
		t.Fatalf("only %d bytes of output", info.OutputBytes)
	}

	late := e.dial(t, "?id="+s.ID, nil)
	var vt vt10x.Terminal
	eventually(t, "the late client's screen to match the screenshot", func() bool {
		vt = replayed(late.output(), cols, rows)
		return vtText(vt) == shot
	})
	out := late.output()
	if !strings.HasPrefix(out, "\x1bc") || len(out) > 64<<10 {
		t.Fatalf("late client got %d bytes starting %q, want a redraw", len(out), out[:min(len(out), 20)])
	}
	for at, text := range want {
		for i, r := range text {
			if got := vt.Cell(at[0]+i, at[1]).Char; got != r {
				t.Fatalf("cell %d,%d is %q, want %q", at[0]+i, at[1], got, r)
			}
		}
	}
	if g := vt.Cell(39, 14); g.FG != vt10x.LightRed || g.BG != vt10x.Blue || g.Mode&4 == 0 {
		t.Fatalf("middle marker lost its colours: %+v", g)
	}
	if g := vt.Cell(50, 14); g.FG != vt10x.DefaultFG || g.BG != vt10x.DefaultBG || g.Mode != 0 {
		t.Fatalf("blank cell has attributes: %+v", g)
	}
	if cur := vt.Cursor(); cur.X != 9 || cur.Y != 9 || vt.CursorVisible() {
		t.Fatalf("cursor at %d,%d visible=%v, want 9,9 hidden", cur.X, cur.Y, vt.CursorVisible())
	}

	// Live output follows the redraw on the same terminal.
	late.send(t, "\x03")
	late.waitOutput(t, "^C")
	late.send(t, "echo after-$((4*5))\n")
	late.waitOutput(t, "after-20")
	eventually(t, "the live output on the late client's screen", func() bool {
		return strings.Contains(vtText(replayed(late.output(), cols, rows)), "after-20")
	})
}

// While the ring holds all output, attach replays it byte for byte.
func TestReattachReplaysUncutOutputExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	s := e.create(t, map[string]any{"shell": "/bin/sh"})
	c := e.dial(t, "?id="+s.ID, nil)
	c.send(t, "printf 'plain-%s \\033[1;32mgreen\\033[0m \\303\\251\\n' $((6*7)); echo end-$((2*4))\n")
	c.waitOutput(t, "end-8")
	late := e.dial(t, "?id="+s.ID, nil)
	var raw []byte
	eventually(t, "the late client to hold exactly the raw output", func() bool {
		_, raw, _ = e.do(t, http.MethodGet, "/api/v1/terminal/raw?id="+s.ID, nil)
		return late.output() == string(raw)
	})
	if !strings.Contains(string(raw), "plain-42 \x1b[1;32mgreen\x1b[0m é") || strings.Contains(string(raw), "\x1bc") {
		t.Fatalf("raw replay %q", raw)
	}
}

// Sessions end with their goroutines (reader, reaper, screen parser and
// client writers): the service's goroutine count returns to where it was.
// Sequential: it counts the process's goroutines.
func TestSessionsLeakNoGoroutines(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.do(t, http.MethodGet, "/health", nil)
	base := serviceGoroutines("")
	var ids []string
	for i := 0; i < 20; i++ {
		s := e.create(t, map[string]any{"shell": "/bin/sh"})
		ids = append(ids, s.ID)
		if i%4 == 0 {
			c := e.dial(t, "?id="+s.ID, nil)
			c.send(t, "seq 1 20000; echo g-$((i=3*3))\n")
			c.waitOutput(t, "g-9")
			e.screenText(t, s.ID)
			c.conn.Close()
			<-c.done
		}
	}
	eventually(t, "a screen parser per session", func() bool { return serviceGoroutines(".parseLoop(") == 20 })
	for _, id := range ids {
		if code, b, _ := e.do(t, http.MethodDelete, "/api/v1/terminal/"+id, nil); code != 200 {
			t.Fatalf("delete: %d %s", code, b)
		}
	}
	eventually(t, "the service's goroutines back to the baseline", func() bool { return serviceGoroutines("") <= base })
	if n := serviceGoroutines(".parseLoop("); n != 0 {
		t.Fatalf("%d screen parsers left", n)
	}
}

// serviceGoroutines counts the goroutines running the terminal package's
// code (whose stack mentions it), and also mentioning frame if given.
func serviceGoroutines(frame string) int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	for n == len(buf) {
		buf = make([]byte, 2*len(buf))
		n = runtime.Stack(buf, true)
	}
	count := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "deckhand/services/terminal.") && strings.Contains(g, frame) {
			count++
		}
	}
	return count
}

// The case the redraw exists for: a full-screen program (on the alternate
// screen, like vim or htop) drew its screen once, then kept updating one
// spot until the ring no longer holds the first drawing. The screen model
// followed along, so a client attaching now still sees the whole screen.
func TestReattachRestoresAFullScreenProgramDrawnLongAgo(t *testing.T) {
	t.Parallel()
	const cols, rows = 80, 24
	e := newEnv(t, map[string]string{"scrollback": "65536"}, nil)
	s := e.create(t, map[string]any{"shell": "/bin/sh", "cols": cols, "rows": rows})
	c := e.dial(t, "?id="+s.ID, nil)
	// 60 bursts of 200 in-place updates (about 170 KB), paced like a busy
	// status display rather than bulk output.
	c.send(t, "u=$(for i in $(seq 1 200); do printf '\\033[5;5Hupd%05d' $i; done); "+
		"printf '\\033[?1049h\\033[2J\\033[1;1H%s\\033[24;72H\\033[7m%s\\033[0m' TOP-LEFT BOT-RIGHT; "+
		"for j in $(seq 1 60); do printf '%s' \"$u\"; sleep 0.02; done; printf '\\033[5;5Hfinal-%s' done; sleep 600\n")
	eventually(t, "the program to finish its updates", func() bool {
		shot, _ := e.screenText(t, s.ID)
		return strings.Contains(shot, "final-done")
	})
	if info, _ := e.session(t, s.ID); info.OutputBytes < 2*65536 {
		t.Fatalf("only %d bytes of output: the ring was not cut", info.OutputBytes)
	}
	shot, hdr := e.screenText(t, s.ID)
	if lines := strings.Split(shot, "\n"); lines[0] != "TOP-LEFT" || lines[23] != strings.Repeat(" ", 71)+"BOT-RIGHT" || hdr.Get("X-Terminal-Screen-Exact") != "true" {
		t.Fatalf("screenshot (exact=%s):\n%s", hdr.Get("X-Terminal-Screen-Exact"), shot)
	}

	late := e.dial(t, "?id="+s.ID, nil)
	var vt vt10x.Terminal
	eventually(t, "the late client's screen to match the screenshot", func() bool {
		vt = replayed(late.output(), cols, rows)
		return vtText(vt) == shot
	})
	if vt.Mode()&vt10x.ModeAltScreen == 0 {
		t.Fatal("the late client is not on the alternate screen")
	}
	if g := vt.Cell(71, 23); g.Char != 'B' || g.Mode&1 == 0 {
		t.Fatalf("reverse-video marker lost its attributes: %+v", g)
	}
}
