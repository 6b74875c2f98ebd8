//go:build linux && cgo

package x11_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/display/api"
	"deckhand/display/desktop"
	"deckhand/display/input"
)

func mouseAt(t *testing.T) string {
	t.Helper()
	out := xtool(t, "xdotool", "getmouselocation")
	f := strings.Fields(out)
	return f[0] + " " + f[1]
}

func TestInfoAndGeometry(t *testing.T) {
	needX(t)
	a := call(t, "GET", "/api/v1/display/info", nil)
	mustOK(t, a, "info")
	var info desktop.Info
	a.decode(t, &info)
	if info.Width != 1920 || info.Height != 1080 || len(info.Displays) != 1 || info.Displays[0].Width != 1920 {
		t.Fatalf("info = %+v", info)
	}
	if got := xtool(t, "xdotool", "getdisplaygeometry"); got != "1920 1080" {
		t.Fatalf("xdotool getdisplaygeometry = %q", got)
	}
	a = call(t, "GET", "/api/v1/display/input/display-geometry", nil)
	mustOK(t, a, "display-geometry")
	var g input.Geometry
	a.decode(t, &g)
	if g.Width != 1920 || g.Height != 1080 {
		t.Fatalf("display-geometry = %+v", g)
	}
	a = call(t, "GET", "/api/v1/display/", nil)
	mustOK(t, a, "index")
	var idx api.Index
	a.decode(t, &idx)
	if !idx.Available || idx.Display != display || len(idx.Endpoints) < 35 {
		t.Fatalf("index = %+v", idx)
	}
}

func TestMouseMoveAndLocation(t *testing.T) {
	needX(t)
	cases := []struct{ x, y int }{{123, 456}, {0, 0}, {1919, 1079}, {960, 540}}
	for _, c := range cases {
		a := call(t, "POST", "/api/v1/display/mouse/move", map[string]int{"x": c.x, "y": c.y})
		mustOK(t, a, "move")
		if got, want := mouseAt(t), fmt.Sprintf("x:%d y:%d", c.x, c.y); got != want {
			t.Fatalf("after move to %v xdotool says %q", c, got)
		}
		a = call(t, "GET", "/api/v1/display/mouse/location", nil)
		var p desktop.Point
		a.decode(t, &p)
		if p.X != c.x || p.Y != c.y {
			t.Fatalf("location = %+v, want %v", p, c)
		}
	}
	a := call(t, "POST", "/api/v1/display/mouse/move-relative", map[string]int{"dx": -60, "dy": 40})
	mustOK(t, a, "move-relative")
	if got := mouseAt(t); got != "x:900 y:580" {
		t.Fatalf("after move-relative xdotool says %q", got)
	}
}

func TestOffScreenIs400WithBounds(t *testing.T) {
	needX(t)
	xtool(t, "xdotool", "mousemove", "10", "20")
	for _, c := range []struct {
		path string
		body any
	}{
		{"/api/v1/display/mouse/move", map[string]int{"x": 1920, "y": 5}},
		{"/api/v1/display/mouse/move", map[string]int{"x": 5, "y": -1}},
		{"/api/v1/display/mouse/click", map[string]int{"x": 5000, "y": 5}},
		{"/api/v1/display/input/click-at", map[string]int{"x": 1, "y": 99999}},
		{"/api/v1/display/mouse/move-relative", map[string]int{"dx": -100}},
		{"/api/v1/display/input/drag", map[string]any{"from": map[string]int{"x": 1, "y": 1}, "to": map[string]int{"x": 3000, "y": 1}}},
	} {
		a := call(t, "POST", c.path, c.body)
		e := a.errCode(t)
		if a.status != 400 || e.Code != "OFF_SCREEN" || !strings.Contains(e.Details, "x 0..1919, y 0..1079") {
			t.Errorf("%s %v: %d %s", c.path, c.body, a.status, a.body)
		}
	}
	if got := mouseAt(t); got != "x:10 y:20" {
		t.Fatalf("a rejected move moved the pointer to %q", got)
	}
	a := call(t, "GET", "/api/v1/display/screenshots?x=1900&width=100", nil)
	if e := a.errCode(t); a.status != 400 || e.Code != "OFF_SCREEN" {
		t.Fatalf("screenshot region off screen: %d %s", a.status, a.body)
	}
}

func TestClickActivatesWindow(t *testing.T) {
	needX(t)
	w1, _ := startXterm(t, "click-one")
	mustOK(t, call(t, "POST", "/api/v1/display/window/move", map[string]any{"id": w1.ID, "x": 100, "y": 600}), "move w1")
	w2, _ := startXterm(t, "click-two")
	mustOK(t, call(t, "POST", "/api/v1/display/window/move", map[string]any{"id": w2.ID, "x": 1000, "y": 600}), "move w2")
	for _, w := range []desktop.Window{w1, w2, w1} {
		g := geometryOf(t, w.ID)
		a := call(t, "POST", "/api/v1/display/mouse/click", map[string]any{"x": g.X + 50, "y": g.Y + 50})
		mustOK(t, a, "click")
		var p desktop.Point
		a.decode(t, &p)
		if p.X != g.X+50 || p.Y != g.Y+50 {
			t.Fatalf("click answered %+v", p)
		}
		eventually(t, "clicked window active", func() bool {
			out, _ := xtry("xdotool", "getactivewindow")
			return out == fmt.Sprint(w.ID)
		})
	}
}

func TestTypeIntoXterm(t *testing.T) {
	needX(t)
	dir := t.TempDir()
	w, _ := startXterm(t, "type-target", "-e", "bash", "--norc", "--noprofile")
	mustOK(t, call(t, "POST", "/api/v1/display/window/focus", map[string]any{"id": w.ID}), "focus")
	eventually(t, "xterm focused", func() bool {
		out, _ := xtry("xdotool", "getactivewindow")
		return out == fmt.Sprint(w.ID)
	})
	cases := []struct {
		name, text, want string
		delay            int
	}{
		{"ascii", "ASCII: Hello, World! ~`#$%^&*()_+-={}[]|:;'<>?,./", "ASCII: Hello, World! ~`#$%^&*()_+-={}[]|:;'<>?,./", 0},
		{"unicode", "héllo wörld € ✓ Ω 日本", "héllo wörld € ✓ Ω 日本", 0},
		{"delay", "slow typing", "slow typing", 5},
	}
	for _, c := range cases {
		file := filepath.Join(dir, c.name)
		text := fmt.Sprintf("cat > %s <<'EOF'\n%s\nEOF\n", file, c.text)
		a := call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": text, "delay_ms": c.delay})
		mustOK(t, a, "type "+c.name)
		var typed input.Typed
		a.decode(t, &typed)
		if typed.Typed != len([]rune(text)) {
			t.Fatalf("typed %d of %d", typed.Typed, len([]rune(text)))
		}
		eventually(t, "file written by the typed command", func() bool {
			b, err := os.ReadFile(file)
			return err == nil && strings.TrimSuffix(string(b), "\n") == c.want
		})
	}
	// type-at clicks into the window first (focus follows the click)
	a := call(t, "POST", "/api/v1/display/window/search", map[string]any{"name": "^deckhand-xterm$"})
	var others []desktop.Window
	a.decode(t, &others)
	if len(others) != 1 {
		t.Fatalf("search deckhand-xterm: %s", a.body)
	}
	mustOK(t, call(t, "POST", "/api/v1/display/window/focus", map[string]any{"id": others[0].ID}), "focus elsewhere")
	g := geometryOf(t, w.ID)
	fileAt := filepath.Join(dir, "at")
	// the bottom-right corner: clear of deckhand-xterm, now raised above it
	a = call(t, "POST", "/api/v1/display/input/type-at", map[string]any{"x": g.X + g.Width - 20, "y": g.Y + g.Height - 20,
		"text": "echo at > " + fileAt + "\n"})
	mustOK(t, a, "type-at")
	eventually(t, "type-at ran", func() bool {
		b, _ := os.ReadFile(fileAt)
		return string(b) == "at\n"
	})
	// key with modifiers: type a command, then press Return as a key
	file := filepath.Join(dir, "key")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": "echo keyed > " + file}), "type")
	a = call(t, "POST", "/api/v1/display/keyboard/key", map[string]any{"key": "enter"})
	mustOK(t, a, "key enter")
	eventually(t, "Return key ran the command", func() bool {
		b, _ := os.ReadFile(file)
		return string(b) == "keyed\n"
	})
	// ctrl+u erases the typed line (readline), so only "echo ok" runs
	file2 := filepath.Join(dir, "chord")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": "echo wrong > " + file2}), "type")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/key", map[string]any{"key": "u", "modifiers": []string{"ctrl"}}), "ctrl+u")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": "echo right > " + file2}), "type")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/key", map[string]any{"key": "Return"}), "Return")
	eventually(t, "ctrl+u chord", func() bool {
		b, _ := os.ReadFile(file2)
		return string(b) == "right\n"
	})
	// key-down shift + typing lowercase gives upper case, reset releases it
	file3 := filepath.Join(dir, "held")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": "echo "}), "type")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/key-down", map[string]any{"key": "shift"}), "shift down")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/key", map[string]any{"key": "a"}), "a")
	a = call(t, "POST", "/api/v1/display/input/reset", nil)
	mustOK(t, a, "reset")
	var rr input.ResetResult
	a.decode(t, &rr)
	if len(rr.ReleasedKeys) == 0 || rr.ReleasedKeys[0] != "Shift_L" {
		t.Fatalf("reset released %+v", rr)
	}
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": "b > " + file3 + "\n"}), "type")
	eventually(t, "shift held for one key then released by reset", func() bool {
		b, _ := os.ReadFile(file3)
		return string(b) == "Ab\n"
	})
}

func TestUnknownKeyListsCloseMatches(t *testing.T) {
	needX(t)
	for _, c := range []struct {
		body  map[string]any
		field string
		match string
	}{
		{map[string]any{"key": "entr"}, "key", "enter"},
		{map[string]any{"key": "Retrun"}, "key", "Return"},
		{map[string]any{"key": "a", "modifiers": []string{"ctlr"}}, "modifiers[0]", "ctrl"},
		{map[string]any{"key": "pagedwn"}, "key", "pagedown"},
	} {
		a := call(t, "POST", "/api/v1/display/keyboard/key", c.body)
		e := a.errCode(t)
		if a.status != 400 || !strings.HasPrefix(e.Message, c.field+": unknown key name") || !strings.Contains(e.Details, c.match) {
			t.Errorf("%v: %d %s", c.body, a.status, a.body)
		}
	}
}

func TestScrollAndButtons(t *testing.T) {
	needX(t)
	// over a window of our own: on the bare desktop openbox answers right and
	// middle clicks with menus that grab the pointer
	w, _ := startXterm(t, "button-target")
	g := geometryOf(t, w.ID)
	x, y := g.X+30, g.Y+30
	a := call(t, "POST", "/api/v1/display/mouse/scroll", map[string]any{"x": x, "y": y, "direction": "up", "amount": 3})
	mustOK(t, a, "scroll")
	if got, want := mouseAt(t), fmt.Sprintf("x:%d y:%d", x, y); got != want {
		t.Fatalf("scroll moved to %q, want %q", got, want)
	}
	mustOK(t, call(t, "POST", "/api/v1/display/mouse/down", map[string]any{"button": "right"}), "down")
	a = call(t, "POST", "/api/v1/display/input/reset", nil)
	mustOK(t, a, "reset")
	var rr input.ResetResult
	a.decode(t, &rr)
	if len(rr.ReleasedButtons) != 1 || rr.ReleasedButtons[0] != "right" {
		t.Fatalf("reset = %s", a.body)
	}
	a = call(t, "POST", "/api/v1/display/input/reset", nil)
	a.decode(t, &rr)
	if len(rr.ReleasedButtons) != 0 || len(rr.ReleasedKeys) != 0 {
		t.Fatalf("second reset still released %s", a.body)
	}
	a = call(t, "POST", "/api/v1/display/mouse/double-click", map[string]any{"x": x, "y": y, "button": "middle"})
	mustOK(t, a, "double-click")
	a = call(t, "POST", "/api/v1/display/mouse/click", map[string]any{"x": 5})
	if e := a.errCode(t); a.status != 400 || !strings.HasPrefix(e.Message, "y: is required") {
		t.Fatalf("click with x only: %d %s", a.status, a.body)
	}
	a = call(t, "POST", "/api/v1/display/mouse/click", map[string]any{"button": "fourth"})
	if a.status != 400 {
		t.Fatalf("bad button: %d %s", a.status, a.body)
	}
}

func TestWaitTimesOutAndSees(t *testing.T) {
	needX(t)
	start := time.Now()
	a := call(t, "POST", "/api/v1/display/input/wait", map[string]any{"until": "window", "name": "^never-such-window$", "timeout_ms": 200})
	mustOK(t, a, "wait")
	var w input.WaitResult
	a.decode(t, &w)
	if w.Met || w.ElapsedMS < 200 || time.Since(start) > 5*time.Second {
		t.Fatalf("wait = %s", a.body)
	}
	// region change: a window opening in the region changes its pixels
	done := make(chan answer, 1)
	go func() {
		done <- call(t, "POST", "/api/v1/display/input/wait", map[string]any{"until": "region-change",
			"region": map[string]int{"x": 1200, "y": 100, "width": 600, "height": 400}, "timeout_ms": 15000})
	}()
	time.Sleep(300 * time.Millisecond)
	_, _ = startXterm(t, "region-changer", "-geometry", "40x10+1300+150")
	a = <-done
	mustOK(t, a, "wait region")
	a.decode(t, &w)
	if !w.Met {
		t.Fatalf("region change not seen: %s", a.body)
	}
	a = call(t, "POST", "/api/v1/display/input/wait", map[string]any{"until": "window", "name": "("})
	if a.status != 400 {
		t.Fatalf("bad regexp: %d %s", a.status, a.body)
	}
}
