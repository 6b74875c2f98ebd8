//go:build linux && cgo

package x11

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jezek/xgb"
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

var (
	_          Display = (*Driver)(nil)
	xgbLogOnce sync.Once
)

// Open connects to display (":99"; "" means $DISPLAY).
func Open(display string, log *slog.Logger) (Display, error) {
	if log == nil {
		log = slog.Default()
	}
	// xgb logs through a package-level logger (for example "no
	// .Xauthority, trying without"): keep it at debug level
	xgbLogOnce.Do(func() { xgb.Logger = slog.NewLogLogger(log.Handler(), slog.LevelDebug) })
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("connect to X display %q: %w", display, err)
	}
	if display == "" {
		display = fmt.Sprintf(":%d", conn.DisplayNumber)
	}
	d := &Driver{
		display:   display,
		log:       log,
		conn:      conn,
		atomCache: newAtomCache(conn),
		done:      make(chan struct{}),
	}
	setup := xproto.Setup(conn)
	d.screen = setup.DefaultScreen(conn)
	d.root = d.screen.Root
	if err := xtest.Init(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("X display %s lacks the XTEST extension: %w", display, err)
	}
	if xinerama.Init(conn) == nil {
		if r, err := xinerama.IsActive(conn).Reply(); err == nil && r.State != 0 {
			d.xinerama = true
		}
	}
	if err := d.kb.init(d); err != nil {
		conn.Close()
		return nil, fmt.Errorf("read the keyboard map: %w", err)
	}
	d.cap.init(d)
	go d.drain()
	clip, err := newClipboard(display, log)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("clipboard connection: %w", err)
	}
	d.clip = clip
	return d, nil
}

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

// Close releases the capture segments, the clipboard and the connection.
func (d *Driver) Close() error {
	d.closed.Do(func() {
		d.kb.restore(d)
		d.cap.close(d)
		if d.clip != nil {
			d.clip.close()
		}
		d.conn.Close()
	})
	return nil
}

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
			sort.Slice(info.Displays, func(i, j int) bool {
				a, b := info.Displays[i], info.Displays[j]
				if a.X != b.X {
					return a.X < b.X
				}
				return a.Y < b.Y
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

// ReleaseAll releases every key and button the server reports down. A
// window manager's synchronous button grab (click to focus) freezes event
// processing until it answers, so a release sent just before can still be
// queued: give the server a moment to catch up before releasing again.
func (d *Driver) ReleaseAll() ([]desktop.Keysym, []desktop.Button, error) {
	var km *xproto.QueryKeymapReply
	var ptr *xproto.QueryPointerReply
	deadline := time.Now().Add(300 * time.Millisecond)
	for {
		var err error
		if km, err = xproto.QueryKeymap(d.conn).Reply(); err != nil {
			return nil, nil, d.xerr("read the key state", err)
		}
		if ptr, err = xproto.QueryPointer(d.conn, d.root).Reply(); err != nil {
			return nil, nil, d.xerr("read the pointer", err)
		}
		down := ptr.Mask&(0x1f<<8) != 0
		for _, b := range km.Keys {
			down = down || b != 0
		}
		if !down || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var keys []desktop.Keysym
	for i, bits := range km.Keys {
		for j := 0; j < 8; j++ {
			if bits&(1<<j) == 0 {
				continue
			}
			kc := xproto.Keycode(i*8 + j)
			if err := xtest.FakeInputChecked(d.conn, xproto.KeyRelease, byte(kc), 0, 0, 0, 0, 0).Check(); err != nil {
				return keys, nil, d.xerr("release a key", err)
			}
			keys = append(keys, d.kb.symOf(kc))
		}
	}
	var buttons []desktop.Button
	for b := desktop.Button(1); b <= 5; b++ {
		if ptr.Mask&(1<<(7+uint(b))) != 0 {
			if err := xtest.FakeInputChecked(d.conn, xproto.ButtonRelease, byte(b), 0, 0, 0, 0, 0).Check(); err != nil {
				return keys, buttons, d.xerr("release a button", err)
			}
			buttons = append(buttons, b)
		}
	}
	return keys, buttons, nil
}

// Available reports whether this build has the X11 driver.
const Available = true
