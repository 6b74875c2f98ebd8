//go:build linux && cgo

package x11_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"deckhand/display/desktop"
	"deckhand/display/input"
)

// geometryOf reads a window's client area with xwininfo (absolute position)
// and xdotool (size). xdotool's own Position adds the window's offset in its
// frame a second time, so the position comes from xwininfo.
func geometryOf(t *testing.T, id uint32) input.Geometry {
	t.Helper()
	info := xtool(t, "xwininfo", "-id", fmt.Sprint(id))
	num := func(label string) int {
		m := regexp.MustCompile(label + `:\s+(-?\d+)`).FindStringSubmatch(info)
		if m == nil {
			t.Fatalf("xwininfo lacks %s: %s", label, info)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	g := input.Geometry{ID: id, X: num("Absolute upper-left X"), Y: num("Absolute upper-left Y")}
	out := xtool(t, "xdotool", "getwindowgeometry", fmt.Sprint(id))
	m := regexp.MustCompile(`Geometry: (\d+)x(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("xdotool getwindowgeometry: %s", out)
	}
	g.Width, _ = strconv.Atoi(m[1])
	g.Height, _ = strconv.Atoi(m[2])
	return g
}

func TestWindowsListAndProperties(t *testing.T) {
	needX(t)
	w, cmd := startXterm(t, "props-window")
	a := call(t, "GET", "/api/v1/display/windows", nil)
	mustOK(t, a, "windows")
	var list []desktop.Window
	a.decode(t, &list)
	var got *desktop.Window
	for i := range list {
		if list[i].ID == w.ID {
			got = &list[i]
		}
	}
	if got == nil {
		t.Fatalf("window %d not listed: %s", w.ID, a.body)
	}
	g := geometryOf(t, w.ID)
	if got.Name != "props-window" || got.PID != cmd.Process.Pid || got.X != g.X || got.Y != g.Y ||
		got.Width != g.Width || got.Height != g.Height {
		t.Fatalf("listed %+v, xwininfo/xdotool say %+v, pid %d", *got, g, cmd.Process.Pid)
	}
	if !strings.Contains(string(a.body), `"active":`) {
		t.Fatalf("list lacks active: %s", a.body)
	}

	id := fmt.Sprint(w.ID)
	a = call(t, "GET", "/api/v1/display/window/"+id+"/properties", nil)
	mustOK(t, a, "properties")
	var p desktop.WindowProperties
	a.decode(t, &p)
	if p.Class != "XTerm" || p.Instance != "xterm" || p.ProcessName != "xterm" || !p.Mapped || p.PID != cmd.Process.Pid {
		t.Fatalf("properties = %s", a.body)
	}
	a = call(t, "GET", fmt.Sprintf("/api/v1/display/window/0x%x/name", w.ID), nil)
	mustOK(t, a, "name (hex id)")
	var n input.WindowName
	a.decode(t, &n)
	if n.Name != "props-window" || n.ID != w.ID {
		t.Fatalf("name = %s", a.body)
	}
	a = call(t, "GET", "/api/v1/display/window/"+id+"/geometry", nil)
	mustOK(t, a, "geometry")
	var gg input.Geometry
	a.decode(t, &gg)
	if gg != g {
		t.Fatalf("geometry %+v, xwininfo %+v", gg, g)
	}

	a = call(t, "POST", "/api/v1/display/window/search", map[string]any{"pid": cmd.Process.Pid})
	mustOK(t, a, "search pid")
	a.decode(t, &list)
	if len(list) != 1 || list[0].ID != w.ID {
		t.Fatalf("search by pid = %s", a.body)
	}
	a = call(t, "POST", "/api/v1/display/window/search", map[string]any{"name": "(?i)^PROPS-", "class": "^XTerm$"})
	mustOK(t, a, "search name")
	a.decode(t, &list)
	if len(list) != 1 || list[0].ID != w.ID {
		t.Fatalf("search by name = %s", a.body)
	}
	a = call(t, "POST", "/api/v1/display/window/search", map[string]any{"name": "["})
	if e := a.errCode(t); a.status != 400 || !strings.HasPrefix(e.Message, "name: is not a valid regular expression") {
		t.Fatalf("bad regexp: %d %s", a.status, a.body)
	}
}

func TestWindowActions(t *testing.T) {
	needX(t)
	w, cmd := startXterm(t, "action-window")
	id := w.ID

	a := call(t, "POST", "/api/v1/display/window/move", map[string]any{"id": id, "x": 345, "y": 234})
	mustOK(t, a, "move")
	var moved desktop.Window
	a.decode(t, &moved)
	if g := geometryOf(t, id); g.X != 345 || g.Y != 234 || moved.X != 345 || moved.Y != 234 {
		t.Fatalf("moved to %+v, answered %+v", g, moved)
	}

	a = call(t, "POST", "/api/v1/display/window/resize", map[string]any{"id": id, "width": 700, "height": 420})
	mustOK(t, a, "resize")
	var resized desktop.Window
	a.decode(t, &resized)
	g := geometryOf(t, id)
	// xterm rounds to its character cell; the answer must be the real size
	if resized.Width != g.Width || resized.Height != g.Height || abs(g.Width-700) > 20 || abs(g.Height-420) > 30 {
		t.Fatalf("resized answer %+v, xdotool %+v", resized, g)
	}

	a = call(t, "POST", "/api/v1/display/window/focus", map[string]any{"id": id})
	mustOK(t, a, "focus")
	if got := xtool(t, "xdotool", "getactivewindow"); got != fmt.Sprint(id) {
		t.Fatalf("active after focus = %s", got)
	}
	a = call(t, "GET", "/api/v1/display/window/active", nil)
	mustOK(t, a, "active")
	var act desktop.Window
	a.decode(t, &act)
	if act.ID != id || !act.Active {
		t.Fatalf("active = %s", a.body)
	}
	mustOK(t, call(t, "POST", "/api/v1/display/window/raise", map[string]any{"id": id}), "raise")

	mustOK(t, call(t, "POST", "/api/v1/display/window/minimize", map[string]any{"id": id}), "minimize")
	eventually(t, "WM_STATE Iconic", func() bool {
		return strings.Contains(xtool(t, "xprop", "-id", fmt.Sprint(id), "WM_STATE"), "Iconic")
	})
	a = call(t, "GET", fmt.Sprintf("/api/v1/display/window/%d/properties", id), nil)
	var p desktop.WindowProperties
	a.decode(t, &p)
	if !p.Minimized {
		t.Fatalf("properties after minimize: %s", a.body)
	}
	mustOK(t, call(t, "POST", "/api/v1/display/window/focus", map[string]any{"id": id}), "focus restores")
	eventually(t, "WM_STATE Normal", func() bool {
		return strings.Contains(xtool(t, "xprop", "-id", fmt.Sprint(id), "WM_STATE"), "Normal")
	})

	a = call(t, "POST", "/api/v1/display/window/close", map[string]any{"id": id})
	mustOK(t, a, "close")
	var c input.Closed
	a.decode(t, &c)
	if !c.Closed {
		t.Fatalf("close = %s", a.body)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	<-done // the xterm process ended because its window was closed
	a = call(t, "POST", "/api/v1/display/input/wait", map[string]any{"until": "window-gone", "name": "^action-window$", "timeout_ms": 3000})
	mustOK(t, a, "wait gone")
	var wr input.WaitResult
	a.decode(t, &wr)
	if !wr.Met {
		t.Fatalf("window-gone = %s", a.body)
	}
}

// Dragging a window's title bar makes openbox move it: drag through the
// window manager, checked with xwininfo.
func TestDragMovesWindowByTitleBar(t *testing.T) {
	needX(t)
	w, _ := startXterm(t, "drag-window")
	mustOK(t, call(t, "POST", "/api/v1/display/window/move", map[string]any{"id": w.ID, "x": 400, "y": 400}), "move")
	g := geometryOf(t, w.ID)
	from := map[string]int{"x": g.X + 100, "y": g.Y - 8} // the title bar, above the client area
	to := map[string]int{"x": g.X + 250, "y": g.Y + 92}
	a := call(t, "POST", "/api/v1/display/input/drag", map[string]any{"from": from, "to": to, "duration_ms": 200})
	mustOK(t, a, "drag")
	// openbox may snap the last few pixels (edge resistance): about 150,100
	eventually(t, "window dragged by about 150,100", func() bool {
		n := geometryOf(t, w.ID)
		return abs(n.X-g.X-150) <= 25 && abs(n.Y-g.Y-100) <= 25
	})
}

func TestUnknownWindowIs404(t *testing.T) {
	needX(t)
	const ghost = "0x7fffff0"
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/display/window/" + ghost + "/properties"},
		{"GET", "/api/v1/display/window/" + ghost + "/geometry"},
		{"GET", "/api/v1/display/window/" + ghost + "/name"},
	} {
		a := call(t, c.method, c.path, nil)
		if e := a.errCode(t); a.status != 404 || e.Code != "NOT_FOUND" {
			t.Errorf("%s: %d %s", c.path, a.status, a.body)
		}
	}
	for path, body := range map[string]map[string]any{
		"focus": {}, "minimize": {}, "close": {}, "raise": {},
		"move":   {"x": 1, "y": 1},
		"resize": {"width": 10, "height": 10},
	} {
		body["id"] = 0x7fffff0
		a := call(t, "POST", "/api/v1/display/window/"+path, body)
		if e := a.errCode(t); a.status != 404 || e.Code != "NOT_FOUND" {
			t.Errorf("window/%s: %d %s", path, a.status, a.body)
		}
	}
	a := call(t, "GET", "/api/v1/display/window/notanid/name", nil)
	if a.status != 400 {
		t.Errorf("bad id: %d %s", a.status, a.body)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
