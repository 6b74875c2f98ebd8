//go:build linux && cgo

package x11

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jezek/xgb/xproto"

	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// prop reads a whole property (up to 1 MiB).
func (d *Driver) prop(w xproto.Window, name string) (*xproto.GetPropertyReply, error) {
	a := d.atom(name)
	if a == 0 {
		return nil, nil
	}
	return xproto.GetProperty(d.conn, false, w, a, xproto.GetPropertyTypeAny, 0, 1<<18).Reply()
}

func (d *Driver) propCard(w xproto.Window, name string) (uint32, bool) {
	r, err := d.prop(w, name)
	if err != nil || r == nil || r.Format != 32 || len(r.Value) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(r.Value), true
}

// propCards reads a property of 32-bit values (windows, atoms, numbers);
// nil when it is absent.
func propCards[T ~uint32](d *Driver, w xproto.Window, name string) []T {
	r, err := d.prop(w, name)
	if err != nil || r == nil || r.Format != 32 {
		return nil
	}
	out := make([]T, 0, len(r.Value)/4)
	for i := 0; i+4 <= len(r.Value); i += 4 {
		out = append(out, T(binary.LittleEndian.Uint32(r.Value[i:])))
	}
	return out
}

func (d *Driver) propString(w xproto.Window, name string) string {
	r, err := d.prop(w, name)
	if err != nil || r == nil || r.Format != 8 {
		return ""
	}
	return string(r.Value)
}

func (d *Driver) name(w xproto.Window) string {
	if s := d.propString(w, "_NET_WM_NAME"); s != "" {
		return s
	}
	return d.propString(w, "WM_NAME")
}

// hasWM reports a live EWMH window manager: the root names a check window
// that names itself (a crashed manager leaves the root's property behind).
func (d *Driver) hasWM() bool {
	ws := propCards[xproto.Window](d, d.root, "_NET_SUPPORTING_WM_CHECK")
	if len(ws) == 0 || ws[0] == 0 {
		return false
	}
	self := propCards[xproto.Window](d, ws[0], "_NET_SUPPORTING_WM_CHECK")
	return len(self) > 0 && self[0] == ws[0]
}

func (d *Driver) activeID() xproto.Window {
	if ws := propCards[xproto.Window](d, d.root, "_NET_ACTIVE_WINDOW"); len(ws) > 0 && ws[0] != 0 {
		return ws[0]
	}
	if !d.hasWM() {
		if f, err := xproto.GetInputFocus(d.conn).Reply(); err == nil && f.Focus > 1 && f.Focus != d.root {
			return f.Focus
		}
	}
	return 0
}

func notFound(id uint32) error {
	return fault.NotFound("window", fmt.Sprintf("0x%x", id))
}

func isBadWindow(err error) bool {
	switch err.(type) {
	case xproto.WindowError, xproto.DrawableError, *xproto.WindowError, *xproto.DrawableError:
		return true
	}
	return err != nil && (strings.Contains(err.Error(), "BadWindow") || strings.Contains(err.Error(), "BadDrawable"))
}

// window reads one window; active is the active window's id.
func (d *Driver) window(id uint32, active xproto.Window) (desktop.Window, error) {
	w := xproto.Window(id)
	g, err := xproto.GetGeometry(d.conn, xproto.Drawable(w)).Reply()
	var t *xproto.TranslateCoordinatesReply
	if err == nil {
		t, err = xproto.TranslateCoordinates(d.conn, w, d.root, 0, 0).Reply()
	}
	if err != nil {
		if isBadWindow(err) {
			return desktop.Window{}, notFound(id)
		}
		return desktop.Window{}, d.xerr("read a window", err)
	}
	pid, _ := d.propCard(w, "_NET_WM_PID")
	return desktop.Window{ID: id, Name: d.name(w), PID: int(pid), X: int(t.DstX), Y: int(t.DstY),
		Width: int(g.Width), Height: int(g.Height), Active: active != 0 && w == active}, nil
}

// Window reads one window.
func (d *Driver) Window(id uint32) (desktop.Window, error) { return d.window(id, d.activeID()) }

// Windows lists the managed top-level windows in stacking order when the
// window manager publishes it.
func (d *Driver) Windows() ([]desktop.Window, error) {
	ids := propCards[xproto.Window](d, d.root, "_NET_CLIENT_LIST")
	if ids == nil && !d.hasWM() {
		tree, err := xproto.QueryTree(d.conn, d.root).Reply()
		if err != nil {
			return nil, d.xerr("list windows", err)
		}
		for _, c := range tree.Children {
			a, err := xproto.GetWindowAttributes(d.conn, c).Reply()
			if err != nil || a.MapState != xproto.MapStateViewable || a.OverrideRedirect {
				continue
			}
			ids = append(ids, c)
		}
	}
	active := d.activeID()
	out := make([]desktop.Window, 0, len(ids))
	for _, id := range ids {
		w, err := d.window(uint32(id), active)
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, w)
	}
	return out, nil
}

// ActiveWindow is the active window, 404 when none.
func (d *Driver) ActiveWindow() (desktop.Window, error) {
	a := d.activeID()
	if a == 0 {
		return desktop.Window{}, &fault.Error{Code: fault.CodeNotFound, Message: "no window is active", Details: "window"}
	}
	return d.window(uint32(a), a)
}

// WindowProperties reads everything the service reports about a window.
func (d *Driver) WindowProperties(id uint32) (desktop.WindowProperties, error) {
	win, err := d.Window(id)
	if err != nil {
		return desktop.WindowProperties{}, err
	}
	w := xproto.Window(id)
	p := desktop.WindowProperties{Window: win, Desktop: -1, States: []string{}, Types: []string{}}
	if cls := strings.Split(d.propString(w, "WM_CLASS"), "\x00"); len(cls) >= 2 {
		p.Instance, p.Class = cls[0], cls[1]
	}
	p.Role = strings.TrimRight(d.propString(w, "WM_WINDOW_ROLE"), "\x00")
	if a, err := xproto.GetWindowAttributes(d.conn, w).Reply(); err == nil {
		p.Mapped = a.MapState == xproto.MapStateViewable
	}
	for _, s := range propCards[uint32](d, w, "_NET_WM_STATE") {
		name := d.atomName(xproto.Atom(s))
		p.States = append(p.States, name)
		switch name {
		case "_NET_WM_STATE_HIDDEN":
			p.Minimized = true
		case "_NET_WM_STATE_FULLSCREEN":
			p.Fullscreen = true
		case "_NET_WM_STATE_MAXIMIZED_VERT", "_NET_WM_STATE_MAXIMIZED_HORZ":
			p.Maximized = true
		}
	}
	if st := propCards[uint32](d, w, "WM_STATE"); len(st) > 0 && st[0] == 3 {
		p.Minimized = true
	}
	for _, t := range propCards[uint32](d, w, "_NET_WM_WINDOW_TYPE") {
		p.Types = append(p.Types, d.atomName(xproto.Atom(t)))
	}
	if desk, ok := d.propCard(w, "_NET_WM_DESKTOP"); ok && desk != 0xffffffff {
		p.Desktop = int(desk)
	}
	if e := propCards[uint32](d, w, "_NET_FRAME_EXTENTS"); len(e) == 4 {
		p.FrameExtents = desktop.Extents{Left: int(e[0]), Right: int(e[1]), Top: int(e[2]), Bottom: int(e[3])}
	}
	if t := propCards[xproto.Window](d, w, "WM_TRANSIENT_FOR"); len(t) > 0 {
		p.Transient = uint32(t[0])
	}
	if win.PID > 0 {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(win.PID) + "/comm"); err == nil {
			p.ProcessName = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(win.PID) + "/cmdline"); err == nil && len(b) > 0 {
			p.Command = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
	}
	return p, nil
}

// clientMessage sends an EWMH/ICCCM request about w to the root window
// (where the window manager listens) or to w itself.
func (d *Driver) clientMessage(dest, w xproto.Window, typ string, data ...uint32) error {
	var buf [5]uint32
	copy(buf[:], data)
	ev := xproto.ClientMessageEvent{Format: 32, Window: w, Type: d.atom(typ),
		Data: xproto.ClientMessageDataUnionData32New(buf[:])}
	mask := uint32(0)
	if dest == d.root {
		mask = xproto.EventMaskSubstructureRedirect | xproto.EventMaskSubstructureNotify
	}
	return d.xerr("send a window request", xproto.SendEventChecked(d.conn, false, dest, mask, string(ev.Bytes())).Check())
}

// settle polls until ok holds for the window or the time is up; window
// managers act on requests asynchronously.
func (d *Driver) settle(id uint32, limit time.Duration, ok func(desktop.Window) bool) (desktop.Window, error) {
	deadline := time.Now().Add(limit)
	for {
		w, err := d.Window(id)
		if err != nil || ok(w) || time.Now().After(deadline) {
			return w, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const sourcePager = 2 // EWMH source indication: a pager, i.e. direct user intent

// Focus activates the window.
func (d *Driver) Focus(id uint32) error {
	if _, err := d.Window(id); err != nil {
		return err
	}
	w := xproto.Window(id)
	if d.hasWM() {
		if err := d.clientMessage(d.root, w, "_NET_ACTIVE_WINDOW", sourcePager, 0, 0); err != nil {
			return err
		}
		_, err := d.settle(id, time.Second, func(x desktop.Window) bool { return x.Active })
		return err
	}
	_ = xproto.ConfigureWindowChecked(d.conn, w, xproto.ConfigWindowStackMode, []uint32{xproto.StackModeAbove}).Check()
	return d.xerr("focus the window", xproto.SetInputFocusChecked(d.conn, xproto.InputFocusPointerRoot, w, 0).Check())
}

// Raise puts the window on top of the stack.
func (d *Driver) Raise(id uint32) error {
	if _, err := d.Window(id); err != nil {
		return err
	}
	w := xproto.Window(id)
	if d.hasWM() {
		if err := d.clientMessage(d.root, w, "_NET_RESTACK_WINDOW", sourcePager, 0, xproto.StackModeAbove); err != nil {
			return err
		}
	} else if err := xproto.ConfigureWindowChecked(d.conn, w, xproto.ConfigWindowStackMode, []uint32{xproto.StackModeAbove}).Check(); err != nil {
		return d.xerr("raise the window", err)
	}
	xproto.GetInputFocus(d.conn).Reply() // a round trip so the request is processed
	return nil
}

// Minimize iconifies the window (ICCCM WM_CHANGE_STATE).
func (d *Driver) Minimize(id uint32) error {
	if _, err := d.Window(id); err != nil {
		return err
	}
	w := xproto.Window(id)
	if !d.hasWM() {
		return d.xerr("minimize the window", xproto.UnmapWindowChecked(d.conn, w).Check())
	}
	if err := d.clientMessage(d.root, w, "WM_CHANGE_STATE", 3); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if st := propCards[uint32](d, w, "WM_STATE"); len(st) > 0 && st[0] == 3 {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// CloseWindow asks the window to close.
func (d *Driver) CloseWindow(id uint32) error {
	if _, err := d.Window(id); err != nil {
		return err
	}
	w := xproto.Window(id)
	if d.hasWM() {
		return d.clientMessage(d.root, w, "_NET_CLOSE_WINDOW", 0, sourcePager)
	}
	for _, p := range propCards[uint32](d, w, "WM_PROTOCOLS") {
		if xproto.Atom(p) == d.atom("WM_DELETE_WINDOW") {
			return d.clientMessage(w, w, "WM_PROTOCOLS", uint32(d.atom("WM_DELETE_WINDOW")), 0)
		}
	}
	return d.xerr("close the window", xproto.KillClientChecked(d.conn, uint32(w)).Check())
}

// moveResize asks the window manager to place the client area (static
// gravity: the coordinates are the client window's own, not its frame's).
func (d *Driver) moveResize(id uint32, x, y, w, h *int) error {
	win := xproto.Window(id)
	flags := uint32(10) | sourcePager<<12 // StaticGravity
	var all [4]uint32
	// Without a window manager: ConfigWindowX, Y, Width and Height are
	// the bits 1 << i, and only the values given are sent.
	var mask uint16
	var vals []uint32
	for i, v := range []*int{x, y, w, h} {
		if v != nil {
			flags |= 1 << (8 + i)
			mask |= 1 << i
			all[i] = uint32(int32(*v))
			vals = append(vals, all[i])
		}
	}
	if d.hasWM() {
		return d.clientMessage(d.root, win, "_NET_MOVERESIZE_WINDOW", flags, all[0], all[1], all[2], all[3])
	}
	return d.xerr("move the window", xproto.ConfigureWindowChecked(d.conn, win, mask, vals).Check())
}

// Move places the client area at p and answers the window once moved.
func (d *Driver) Move(id uint32, p desktop.Point) (desktop.Window, error) {
	before, err := d.Window(id)
	if err != nil {
		return before, err
	}
	if err := d.moveResize(id, &p.X, &p.Y, nil, nil); err != nil {
		return before, err
	}
	w, err := d.settle(id, time.Second, func(w desktop.Window) bool { return w.X == p.X && w.Y == p.Y })
	if err == nil && (w.X != p.X || w.Y != p.Y) && d.hasWM() {
		// a window manager that ignores the gravity placed the frame; shift
		// by the difference once
		x, y := 2*p.X-w.X, 2*p.Y-w.Y
		if err := d.moveResize(id, &x, &y, nil, nil); err != nil {
			return w, err
		}
		w, err = d.settle(id, time.Second, func(w desktop.Window) bool { return w.X == p.X && w.Y == p.Y })
	}
	return w, err
}

// Resize sets the client area's size (clients with size increments, such
// as terminals, round it to their grid) and answers the window once resized.
func (d *Driver) Resize(id uint32, width, height int) (desktop.Window, error) {
	before, err := d.Window(id)
	if err != nil {
		return before, err
	}
	if err := d.moveResize(id, nil, nil, &width, &height); err != nil {
		return before, err
	}
	return d.settle(id, time.Second, func(w desktop.Window) bool {
		return (w.Width == width && w.Height == height) ||
			((w.Width != before.Width || w.Height != before.Height) && abs(w.Width-width) < 40 && abs(w.Height-height) < 40)
	})
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
