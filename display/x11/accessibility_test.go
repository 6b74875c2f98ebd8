//go:build linux && cgo

package x11_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/display/accessibility"
	"deckhand/display/atspi"
	"deckhand/display/desktop"
	"deckhand/display/input"
	"deckhand/platform/platformtest"
)

// a11yApp is a GTK window (testdata/a11y_app.py) on the test display,
// reachable over its own session bus and accessibility bus.
type a11yApp struct {
	cmd   *exec.Cmd
	win   desktop.Window
	addr  string // the accessibility bus
	bus   *atspi.Bus
	mu    sync.Mutex
	lines []string
	cond  *sync.Cond
}

// startA11yApp starts a private session bus, the GTK window titled title
// (with extra more buttons, and the arguments more) on it, and attaches
// the accessibility bus to the test service.
func startA11yApp(t testing.TB, title string, extra int, more ...string) *a11yApp {
	t.Helper()
	return startA11yScript(t, "a11y_app.py", title, append([]string{fmt.Sprint(extra)}, more...)...)
}

// startA11yScript is startA11yApp with another testdata script, which
// takes the title and args and prints "ready" once its window shows.
func startA11yScript(t testing.TB, script, title string, args ...string) *a11yApp {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk").Run(); err != nil {
		t.Fatal("python3-gi with GTK 3 is missing (scripts/setup.sh installs python3-gi gir1.2-gtk-3.0 at-spi2-core)")
	}
	env := platformtest.SessionBus(t)
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", script), title}, args...)...)
	cmd.Env = append(append(os.Environ(), "DISPLAY="+display, "NO_AT_BRIDGE=0", "GTK_MODULES=", "LC_ALL=C.UTF-8"), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	app := &a11yApp{cmd: cmd}
	app.cond = sync.NewCond(&app.mu)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			app.mu.Lock()
			app.lines = append(app.lines, sc.Text())
			app.cond.Broadcast()
			app.mu.Unlock()
		}
	}()
	app.await(t, "ready")
	a := call(t, "POST", "/api/v1/display/input/wait", map[string]any{"until": "window", "name": "^" + title + "$", "timeout_ms": 20000})
	var w input.WaitResult
	a.decode(t, &w)
	if !w.Met || w.Window == nil {
		t.Fatalf("window %q did not appear: %s", title, a.body)
	}
	app.win = *w.Window
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var session string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "DBUS_SESSION_BUS_ADDRESS="); ok {
			session = v
		}
	}
	addr, err := atspi.SessionAddress(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	app.addr = addr
	if app.bus, err = atspi.Connect(ctx, addr); err != nil {
		t.Fatal(err)
	}
	service.SetAccessibility(app.bus)
	t.Cleanup(func() { service.SetAccessibility(nil); _ = app.bus.Close() })
	return app
}

// await waits (up to 20 s) for the app to print line.
func (a *a11yApp) await(t testing.TB, line string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	timer := time.AfterFunc(20*time.Second, func() { a.mu.Lock(); a.cond.Broadcast(); a.mu.Unlock() })
	defer timer.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		for _, l := range a.lines {
			if l == line {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app never printed %q; it printed %q", line, a.lines)
		}
		a.cond.Wait()
	}
}

// focus makes the app's window the active one.
func (a *a11yApp) focus(t testing.TB) {
	t.Helper()
	mustOK(t, call(t, "POST", "/api/v1/display/window/focus", map[string]any{"id": a.win.ID}), "focus")
	eventually(t, "the app's window active", func() bool {
		var w desktop.Window
		r := call(t, "GET", "/api/v1/display/window/active", nil)
		return r.status == 200 && decodes(r, &w) && w.ID == a.win.ID
	})
}

func decodes(a answer, v any) bool { return json.Unmarshal(a.body, v) == nil }

func find(nodes []desktop.AccessibleNode, role, name string) *desktop.AccessibleNode {
	for i := range nodes {
		if nodes[i].Role == role && (name == "" || nodes[i].Name == name) {
			return &nodes[i]
		}
		if n := find(nodes[i].Children, role, name); n != nil {
			return n
		}
	}
	return nil
}

func tree(t *testing.T, query string) accessibility.AccessibilityTree {
	t.Helper()
	a := call(t, "GET", "/api/v1/display/accessibility"+query, nil)
	mustOK(t, a, "accessibility "+query)
	var tr accessibility.AccessibilityTree
	a.decode(t, &tr)
	return tr
}

// TestAccessibilityTreeAndActions drives a real GTK window through its
// accessibility tree: the tree lists the button where it is on the screen
// (an xdotool click at its bounds' center presses it), clicking it by id
// and setting the text field's value have their effects (the app prints
// them), and the marked screenshot's boxes are the tree's.
func TestAccessibilityTreeAndActions(t *testing.T) {
	needX(t)
	app := startA11yApp(t, "A11y Probe", 0)
	app.focus(t)

	tr := tree(t, "")
	if len(tr.Nodes) != 1 || tr.Nodes[0].Role != "frame" || tr.Nodes[0].Name != "A11y Probe" || tr.Reason != "" {
		t.Fatalf("active tree = %+v", tr)
	}
	btn := find(tr.Nodes, "push button", "Press me")
	entry := find(tr.Nodes, "text", "")
	if btn == nil || entry == nil || btn.Bounds == nil || entry.Bounds == nil {
		t.Fatalf("tree lacks the button or the text field: %+v", tr.Nodes)
	}
	win := desktop.Rect{X: app.win.X, Y: app.win.Y, Width: app.win.Width, Height: app.win.Height}
	b := *btn.Bounds
	if b.Width < 20 || b.Height < 10 || !win.Contains(desktop.Point{X: b.X, Y: b.Y}) ||
		!win.Contains(desktop.Point{X: b.X + b.Width - 1, Y: b.Y + b.Height - 1}) {
		t.Fatalf("button bounds %+v are not inside the window %+v", b, win)
	}
	// the bounds are where the button is: an independent click there presses it
	xtool(t, "xdotool", "mousemove", fmt.Sprint(b.X+b.Width/2), fmt.Sprint(b.Y+b.Height/2), "click", "1")
	app.await(t, "clicked 1")

	// click by element id
	a := call(t, "POST", "/api/v1/display/accessibility/"+btn.ID+"/click", map[string]any{})
	mustOK(t, a, "click element")
	var res accessibility.ElementResult
	a.decode(t, &res)
	if res.Method != "action" || res.Action != "Click" || res.Element.ID != btn.ID {
		t.Fatalf("click answered %+v", res)
	}
	app.await(t, "clicked 2")
	if l := find(tree(t, "").Nodes, "label", "clicks: 2"); l == nil {
		t.Error("the label does not read clicks: 2 in the tree")
	}

	// set the text field's value, then focus it
	a = call(t, "POST", "/api/v1/display/accessibility/"+entry.ID+"/set-value", map[string]any{"value": "hello world"})
	mustOK(t, a, "set-value")
	app.await(t, "entry: hello world")
	a.decode(t, &res)
	if res.Element.Value != "hello world" {
		t.Errorf("set-value answered value %q", res.Element.Value)
	}
	mustOK(t, call(t, "POST", "/api/v1/display/accessibility/"+entry.ID+"/focus", map[string]any{}), "focus element")
	eventually(t, "the text field focused", func() bool {
		e := find(tree(t, "").Nodes, "text", "")
		return e != nil && e.Has("focused")
	})

	// actions by name; a name it lacks is 400 listing the ones it has
	a = call(t, "POST", "/api/v1/display/accessibility/"+btn.ID+"/action", map[string]any{"name": "Click"})
	mustOK(t, a, "action Click")
	app.await(t, "clicked 3")
	a = call(t, "POST", "/api/v1/display/accessibility/"+btn.ID+"/action", map[string]any{"name": "Fly"})
	if e := a.errCode(t); a.status != 400 || e.Details != "actions: Click" {
		t.Errorf("unknown action: %d %s", a.status, a.body)
	}

	// search, filters, bad and vanished ids
	a = call(t, "GET", "/api/v1/display/accessibility/search?role=push+button&name=press", nil)
	mustOK(t, a, "search")
	var found accessibility.AccessibilityTree
	a.decode(t, &found)
	if len(found.Nodes) != 1 || found.Nodes[0].ID != btn.ID {
		t.Errorf("search = %s", a.body)
	}
	if r := tree(t, "?role=text"); find(r.Nodes, "push button", "") != nil || find(r.Nodes, "text", "") == nil {
		t.Errorf("role filter kept %+v", r.Nodes)
	}
	if r := tree(t, "?depth=1"); len(r.Nodes) != 1 || len(r.Nodes[0].Children) != 1 || len(r.Nodes[0].Children[0].Children) != 0 {
		t.Errorf("depth=1 = %+v", r.Nodes)
	}
	bus, _, _ := strings.Cut(btn.ID, "~")
	for id, status := range map[string]int{bus + "~99999": 404, "999.999~3": 404, "nope": 400, "1.2~a~b": 400} {
		if a := call(t, "POST", "/api/v1/display/accessibility/"+id+"/click", map[string]any{}); a.status != status {
			t.Errorf("click %s: %d %s, want %d", id, a.status, a.body, status)
		}
	}

	// marked screenshot: a box per interactive element, at the tree's bounds
	a = call(t, "GET", "/api/v1/display/screenshots/marked", nil)
	mustOK(t, a, "marked screenshot")
	var m accessibility.MarkedScreenshot
	a.decode(t, &m)
	tr = tree(t, "")
	byID := map[string]accessibility.Mark{}
	for _, mk := range m.Marks {
		byID[mk.ElementID] = mk
	}
	img, err := png.Decode(bytes.NewReader(m.Image))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*desktop.AccessibleNode{find(tr.Nodes, "push button", "Press me"), find(tr.Nodes, "text", "")} {
		mk, ok := byID[want.ID]
		if !ok || mk.Bounds != *want.Bounds {
			t.Errorf("mark of %s %q = %+v, want bounds %+v", want.Role, want.Name, mk, *want.Bounds)
			continue
		}
		// the box's edges are drawn where the bounds are
		for _, p := range []desktop.Point{{X: mk.Bounds.X + mk.Bounds.Width/2, Y: mk.Bounds.Y + mk.Bounds.Height - 1},
			{X: mk.Bounds.X + mk.Bounds.Width - 1, Y: mk.Bounds.Y + mk.Bounds.Height/2}} {
			r, g, bl, _ := img.At(p.X, p.Y).RGBA()
			if r>>8 != 0xe0 || g>>8 != 0x10 || bl>>8 != 0xa0 {
				t.Errorf("mark %d: pixel %+v is %02x%02x%02x, not the mark color", mk.N, p, r>>8, g>>8, bl>>8)
			}
		}
	}
	if len(m.Marks) < 2 || m.Marks[0].N != 1 {
		t.Errorf("marks = %+v", m.Marks)
	}
}

// The tree (read from the application's AT-SPI cache, with the calls the
// cache lacks sent at once) says of every element what the element's own
// calls say, read one by one on a connection of their own: role, name,
// description, states, actions, value and screen bounds.
func TestAccessibilityTreeMatchesElements(t *testing.T) {
	needX(t)
	app := startA11yApp(t, "A11y Match", 30)
	app.focus(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	own, err := atspi.Connect(ctx, app.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	tr := tree(t, "")
	n := 0
	walkNodes(tr.Nodes, func(want desktop.AccessibleNode) {
		n++
		got, err := own.Node(ctx, want.ID)
		if err != nil {
			t.Errorf("element %s: %v", want.ID, err)
			return
		}
		want.Children = []desktop.AccessibleNode{}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("element %s:\n tree:    %+v\n element: %+v", want.ID, want, got)
		}
	})
	if n < 30 || find(tr.Nodes, "push button", "b29") == nil || find(tr.Nodes, "label", "clicks: 0") == nil {
		t.Fatalf("the tree has %d elements: %+v", n, tr.Nodes)
	}
}

// Scrolling into view brings a button that starts below a GTK scrolled
// pane's viewport inside it; an element that nothing scrolls is 409.
func TestAccessibilityScrollIntoView(t *testing.T) {
	needX(t)
	app := startA11yApp(t, "A11y Scroll", 0, "scroll")
	app.focus(t)
	tr := tree(t, "")
	pane, far := find(tr.Nodes, "scroll pane", ""), find(tr.Nodes, "push button", "Far away")
	if pane == nil || far == nil || pane.Bounds == nil || far.Bounds == nil {
		t.Fatalf("the tree lacks the pane or its last button: %+v", tr.Nodes)
	}
	view := *pane.Bounds
	inside := func(b desktop.Rect) bool {
		return view.Contains(desktop.Point{X: b.X, Y: b.Y}) && view.Contains(desktop.Point{X: b.X + b.Width - 1, Y: b.Y + b.Height - 1})
	}
	if inside(*far.Bounds) {
		t.Fatalf("the button %+v starts inside the pane %+v", *far.Bounds, view)
	}
	a := call(t, "POST", "/api/v1/display/accessibility/"+far.ID+"/scroll-into-view", map[string]any{})
	mustOK(t, a, "scroll-into-view")
	var res accessibility.ElementResult
	a.decode(t, &res)
	if res.Method != "scroll" || res.Element.ID != far.ID {
		t.Fatalf("scroll-into-view answered %s", a.body)
	}
	eventually(t, "the button inside the pane", func() bool {
		b := find(tree(t, "").Nodes, "push button", "Far away")
		return b != nil && b.Bounds != nil && inside(*b.Bounds)
	})
	// the pane did not move: what moved is its contents
	if p := find(tree(t, "").Nodes, "scroll pane", ""); p == nil || *p.Bounds != view {
		t.Errorf("the pane moved: %+v, was %+v", p, view)
	}
	// an independent click where the tree says the button is presses it
	b := find(tree(t, "").Nodes, "push button", "Far away").Bounds
	xtool(t, "xdotool", "mousemove", fmt.Sprint(b.X+b.Width/2), fmt.Sprint(b.Y+b.Height/2), "click", "1")
	app.await(t, "far away clicked")

	// the text field is in no scroll pane
	entry := find(tree(t, "").Nodes, "text", "")
	a = call(t, "POST", "/api/v1/display/accessibility/"+entry.ID+"/scroll-into-view", map[string]any{})
	if e := a.errCode(t); a.status != 409 || e.Code != "CONFLICT" || !strings.Contains(e.Message, "no scroll pane") {
		t.Errorf("scrolling the text field: %d %s", a.status, a.body)
	}
}

// An application without an accessibility tree (xterm) is said to have
// none, not given an empty or made-up one.
// TestAccessibilityClickThatClosesTheDialog: Yes of a question and OK of
// an entry dialog, clicked by id, end the dialog's program inside the
// click (as zenity does). The click worked: 200 with target_closed and the
// button as it was, and the program exits 0 having read the answer.
func TestAccessibilityClickThatClosesTheDialog(t *testing.T) {
	needX(t)
	for _, tc := range []struct{ kind, button, said string }{
		{"question", "Yes", "response ok"},
		{"entry", "OK", "response ok typed"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			app := startA11yScript(t, "a11y_dialog.py", "A11y Dialog "+tc.kind, tc.kind)
			var btn *desktop.AccessibleNode
			eventually(t, "the dialog's "+tc.button+" button in the tree", func() bool {
				btn = find(tree(t, "?scope=all").Nodes, "push button", tc.button)
				return btn != nil
			})
			a := call(t, "POST", "/api/v1/display/accessibility/"+btn.ID+"/click", map[string]any{})
			mustOK(t, a, "click "+tc.button)
			var res accessibility.ElementResult
			a.decode(t, &res)
			if !res.TargetClosed || res.Element.ID != btn.ID || res.Element.Name != tc.button || res.Method != "action" {
				t.Fatalf("click %s answered %s", tc.button, a.body)
			}
			app.await(t, tc.said)
			if err := app.cmd.Wait(); err != nil {
				t.Fatalf("the dialog exited with %v, want 0", err)
			}
		})
	}
}

func TestAccessibilityWindowWithoutTree(t *testing.T) {
	needX(t)
	startA11yApp(t, "A11y Other", 0)
	w, _ := startXterm(t, "no-tree-xterm")
	mustOK(t, call(t, "POST", "/api/v1/display/window/focus", map[string]any{"id": w.ID}), "focus xterm")
	eventually(t, "xterm active", func() bool {
		var aw desktop.Window
		r := call(t, "GET", "/api/v1/display/window/active", nil)
		return r.status == 200 && decodes(r, &aw) && aw.ID == w.ID
	})
	tr := tree(t, "")
	if len(tr.Nodes) != 0 || !strings.Contains(tr.Reason, "exposes no accessibility tree") {
		t.Fatalf("xterm's tree = %+v", tr)
	}
	// every application still lists the GTK one
	if all := tree(t, "?scope=all"); find(all.Nodes, "frame", "A11y Other") == nil {
		t.Errorf("scope=all lacks the GTK window: %+v", all.Nodes)
	}
}

// BenchmarkAccessibilityTree reads the active window's tree of a GTK
// window with 200 buttons (206 elements) through the HTTP API and
// reports the p50 and p90 latency.
func BenchmarkAccessibilityTree(b *testing.B) {
	if skipWhy != "" {
		b.Skip(skipWhy)
	}
	app := startA11yApp(b, "A11y Bench", 200)
	app.focus(b)
	var tr accessibility.AccessibilityTree
	call(b, "GET", "/api/v1/display/accessibility", nil).decode(b, &tr)
	n := 0
	walkNodes(tr.Nodes, func(desktop.AccessibleNode) { n++ })
	if n < 200 {
		b.Fatalf("the tree has %d elements, want 200 or more", n)
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		a := call(b, "GET", "/api/v1/display/accessibility", nil)
		times = append(times, time.Since(t0))
		if a.status != 200 {
			b.Fatalf("tree: %d %s", a.status, a.body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n), "elements")
	b.ReportMetric(quantile(times, 0.5), "p50-ms")
	b.ReportMetric(quantile(times, 0.9), "p90-ms")
}

func walkNodes(nodes []desktop.AccessibleNode, fn func(desktop.AccessibleNode)) {
	for _, n := range nodes {
		fn(n)
		walkNodes(n.Children, fn)
	}
}
