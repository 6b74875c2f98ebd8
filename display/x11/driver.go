//go:build linux && cgo

package x11

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jezek/xgb"
	mshm "github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xinerama"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// Driver implements desktop.Driver on one X display.
type Driver struct {
	display string
	log     *slog.Logger
	conn    *xgb.Conn
	root    xproto.Window
	screen  *xproto.ScreenInfo
	*atomCache

	xinerama bool
	// unsynced: input was sent that no reply has followed yet (any reply
	// on the connection means the server processed everything before it)
	unsynced atomic.Bool

	kb   keyboard
	cap  capturer
	clip *clipboard

	done     chan struct{}
	doneOnce sync.Once
	closed   sync.Once
}

// keyboard maps keysyms to keycodes. Keysyms the keymap lacks (most of
// Unicode) are bound, one at a time, to spare keycodes that carry no symbol,
// the way xdotool does. Spares are reused least recently used first and a
// spare is not rebound within rebindGap of its last use, because clients
// re-read the keymap lazily after MappingNotify and would otherwise see the
// next character's binding.
type keyboard struct {
	mu      sync.Mutex
	min     xproto.Keycode
	max     xproto.Keycode
	per     int
	syms    []xproto.Keysym // (keycode-min)*per + level
	where   map[desktop.Keysym]keyPos
	shift   xproto.Keycode
	spares  []spare
	pressed map[desktop.Keysym]keyPos // held by Key(down), to release the same way
}

type keyPos struct {
	code  xproto.Keycode
	shift bool
}

type spare struct {
	code xproto.Keycode
	sym  desktop.Keysym
	used time.Time
}

// capturer grabs root-window pixels. With MIT-SHM the server writes the
// pixels straight into a shared segment (no copy through the socket, no
// per-pixel conversion); segments are kept and reused, one per concurrent
// capture. Without it (a remote display) it falls back to GetImage.
type capturer struct {
	mu     sync.Mutex
	useSHM bool
	free   []*segment
	all    []*segment
	cursor bool // XFIXES present
	bpp32  bool
}

type segment struct {
	id   int
	seg  mshm.Seg
	data []byte
}

var (
	_          Display = (*Driver)(nil)
	xgbLogOnce sync.Once
)

// drain reads the main connection's events and asynchronous errors (it
// selects none, but xgb blocks when its queue fills) and notices when the
// server goes away.
func (d *Driver) drain() {
	for {
		ev, xerr := d.conn.WaitForEvent()
		if ev == nil && xerr == nil {
			d.doneOnce.Do(func() { close(d.done) })
			return
		}
		if xerr != nil {
			d.log.Debug("x11 async error", "err", xerr.Error())
		}
	}
}

// Done is closed when the X connection is lost.
func (d *Driver) Done() <-chan struct{} { return d.done }

// Display names the display.
func (d *Driver) Display() string { return d.display }

// atomName is a's name, "atomN" when the server cannot name it.
func (d *Driver) atomName(a xproto.Atom) string {
	if n, ok := d.lookupName(a); ok {
		return n
	}
	return fmt.Sprintf("atom%d", a)
}

// xerr turns an X protocol failure into a client-safe error; a connection
// that is gone is DISPLAY_UNAVAILABLE.
func (d *Driver) xerr(op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fault.Error
	if errors.As(err, &pe) {
		return err
	}
	select {
	case <-d.done:
		return &fault.Error{Code: desktop.CodeDisplayUnavailable, Message: "the X display " + d.display + " went away", Cause: err}
	default:
	}
	if strings.Contains(err.Error(), "connection") || strings.Contains(err.Error(), "EOF") {
		return &fault.Error{Code: desktop.CodeDisplayUnavailable, Message: "lost the X display " + d.display, Cause: err}
	}
	return &fault.Error{Code: fault.CodeBackend, Message: "the X server refused to " + op, Cause: err}
}

// Info reports the root window and its monitors.
func (d *Driver) Info() (desktop.Info, error) {
	info := desktop.Info{Width: int(d.screen.WidthInPixels), Height: int(d.screen.HeightInPixels)}
	// the root may have been resized (RandR); ask for its real size
	if g, err := xproto.GetGeometry(d.conn, xproto.Drawable(d.root)).Reply(); err == nil {
		info.Width, info.Height = int(g.Width), int(g.Height)
	} else {
		return info, d.xerr("read the root window", err)
	}
	if d.xinerama {
		if r, err := xinerama.QueryScreens(d.conn).Reply(); err == nil && len(r.ScreenInfo) > 0 {
			for _, s := range r.ScreenInfo {
				info.Displays = append(info.Displays, desktop.Screen{X: int(s.XOrg), Y: int(s.YOrg),
					Width: int(s.Width), Height: int(s.Height)})
			}
			// heads come in the server's creation order; number them left to
			// right, top to bottom, as people point at them
			slices.SortFunc(info.Displays, func(a, b desktop.Screen) int {
				return cmp.Or(cmp.Compare(a.X, b.X), cmp.Compare(a.Y, b.Y))
			})
			for i := range info.Displays {
				info.Displays[i].Index = i
			}
			return info, nil
		}
	}
	info.Displays = []desktop.Screen{{Index: 0, Width: info.Width, Height: info.Height}}
	return info, nil
}

// Pointer is where the pointer is.
func (d *Driver) Pointer() (desktop.Point, error) {
	d.unsynced.Store(false)
	r, err := xproto.QueryPointer(d.conn, d.root).Reply()
	if err != nil {
		return desktop.Point{}, d.xerr("read the pointer", err)
	}
	return desktop.Point{X: int(r.RootX), Y: int(r.RootY)}, nil
}

// UnderPointer is the root's child under the pointer.
func (d *Driver) UnderPointer() (uint32, error) {
	d.unsynced.Store(false)
	r, err := xproto.QueryPointer(d.conn, d.root).Reply()
	if err != nil {
		return 0, d.xerr("read the pointer", err)
	}
	return uint32(r.Child), nil
}

// MoveTo moves the pointer. Input requests are sent without waiting for
// the server (one connection keeps them in order, so a following Pointer
// sees the new place); Sync waits for all of them at the end of an action.
func (d *Driver) MoveTo(p desktop.Point) error {
	d.unsynced.Store(true)
	xtest.FakeInput(d.conn, xproto.MotionNotify, 0, 0, d.root, int16(p.X), int16(p.Y), 0)
	return d.alive()
}

// Button presses or releases a pointer button.
func (d *Driver) Button(b desktop.Button, down bool) error {
	return d.fakePress(xproto.ButtonPress, xproto.ButtonRelease, byte(b), down)
}

// fakePress sends an XTEST press (down) or release of a button or keycode,
// unsynced like MoveTo.
func (d *Driver) fakePress(press, release, detail byte, down bool) error {
	typ := release
	if down {
		typ = press
	}
	d.unsynced.Store(true)
	xtest.FakeInput(d.conn, typ, detail, 0, 0, 0, 0, 0)
	return d.alive()
}

// Sync returns once the server has processed every request sent so far.
func (d *Driver) Sync() error {
	if !d.unsynced.Swap(false) {
		return d.alive()
	}
	_, err := xproto.GetInputFocus(d.conn).Reply()
	return d.xerr("finish the input", err)
}

// alive fails fast when the connection is gone.
func (d *Driver) alive() error {
	select {
	case <-d.done:
		return &fault.Error{Code: desktop.CodeDisplayUnavailable, Message: "the X display " + d.display + " went away"}
	default:
		return nil
	}
}

// Available reports whether this build has the X11 driver.
const Available = true
