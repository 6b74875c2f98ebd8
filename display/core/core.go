// Package core is what the display service's concerns share: the desktop
// they act on (the current driver, or why there is none: 503
// DISPLAY_UNAVAILABLE), the input lock with its gate (a person who took
// over refuses the agent's input), the timeline every action is told to
// (a recording keeps it), the route shape and the screen rules (400
// OFF_SCREEN). The concerns (input, capture, accessibility, recordings,
// takeover) each own their routes and import this and display/desktop
// only, besides what one concern builds on another (accessibility clicks
// through input).
package core

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"deckhand/display/desktop"
	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
)

// CodeOffScreen: a position or region does not lie on the screen.
const CodeOffScreen = "OFF_SCREEN"

func init() {
	fault.RegisterCode(CodeOffScreen, http.StatusBadRequest)
}

// Prefix is where the display service's routes live.
const Prefix = "/api/v1/display"

// TimelineTarget is the element of an element action on a timeline.
type TimelineTarget struct {
	ID   string `json:"id" required:"true"`
	Role string `json:"role" required:"true"`
	Name string `json:"name" required:"true"`
}

// Desk is the desktop as the concerns share it. Its driver can come and
// go (the X server starts after the service, or restarts).
type Desk struct {
	Log   *slog.Logger
	Clock clockpkg.Clock

	drv    atomic.Pointer[desktop.Driver]
	reason atomic.Pointer[string]

	// input serialises everything that presses, moves or types, so one
	// client's batch is never interleaved with another's clicks.
	input    sync.Mutex
	gate     atomic.Pointer[func() error]
	timeline atomic.Pointer[func(action string, args any, el *TimelineTarget, err error)]
}

// NewDesk is a desk without a driver until SetDriver.
func NewDesk(log *slog.Logger, clock clockpkg.Clock) *Desk {
	if log == nil {
		log = slog.Default()
	}
	if clock == nil {
		clock = clockpkg.SystemClock{}
	}
	d := &Desk{Log: log, Clock: clock}
	d.SetUnavailable("no X display is configured (set --display or DISPLAY)")
	return d
}

// SetDriver makes the display available through drv.
func (d *Desk) SetDriver(drv desktop.Driver) { d.drv.Store(&drv) }

// SetUnavailable drops the driver (the caller closes it) and records why.
func (d *Desk) SetUnavailable(reason string) {
	d.reason.Store(&reason)
	d.drv.Store(nil)
}

// Driver returns the current driver, or nil.
func (d *Desk) Driver() desktop.Driver {
	if p := d.drv.Load(); p != nil {
		return *p
	}
	return nil
}

// Reason says why there is no driver.
func (d *Desk) Reason() string { return *d.reason.Load() }

// Current is the driver, 503 DISPLAY_UNAVAILABLE when there is none.
func (d *Desk) Current() (desktop.Driver, error) {
	if drv := d.Driver(); drv != nil {
		return drv, nil
	}
	return nil, &fault.Error{Code: desktop.CodeDisplayUnavailable,
		Message: "the display service has no X display: " + d.Reason(),
		Details: "start an X server (for example scripts/xvfb.sh) and give the agent --display :N"}
}

// Read is a query of the driver, 503 when there is none.
func Read[T any](d *Desk, fetch func(desktop.Driver) (T, error)) (T, error) {
	drv, err := d.Current()
	if err != nil {
		var zero T
		return zero, err
	}
	return fetch(drv)
}

// Lock takes the input lock: what runs under it is never interleaved
// with another client's input.
func (d *Desk) Lock() { d.input.Lock() }

// Unlock releases the input lock.
func (d *Desk) Unlock() { d.input.Unlock() }

// SetGate installs what refuses the agent's input (the takeover).
func (d *Desk) SetGate(gate func() error) { d.gate.Store(&gate) }

// Gate answers why the agent's input is refused now, nil when it is not.
func (d *Desk) Gate() error {
	if g := d.gate.Load(); g != nil {
		return (*g)()
	}
	return nil
}

// SetTimeline installs what every display action is told to (the
// recordings).
func (d *Desk) SetTimeline(fn func(action string, args any, el *TimelineTarget, err error)) {
	d.timeline.Store(&fn)
}

// Timeline tells the action (its name, its arguments as sent, the element
// of an element action and its error) to the timeline.
func (d *Desk) Timeline(action string, args any, el *TimelineTarget, err error) {
	if fn := d.timeline.Load(); fn != nil {
		(*fn)(action, args, el, err)
	}
}

// Route is one route of the display service under Prefix.
func Route(method, path, id, summary, desc string, o platform.Operation) platform.Route {
	return platform.Route{Method: method, Path: Prefix + path, OperationID: id, Summary: summary, Description: desc,
		Tags: []string{"display"}, Op: o}
}

// Bounds is the root window as a rectangle.
func Bounds(d desktop.Driver) (desktop.Rect, error) {
	info, err := d.Info()
	if err != nil {
		return desktop.Rect{}, err
	}
	return desktop.Rect{Width: info.Width, Height: info.Height}, nil
}

// OnScreen is the off-screen rule: 400 OFF_SCREEN naming the field and
// the bounds.
func OnScreen(xf, yf string, p desktop.Point, b desktop.Rect) error {
	field := ""
	switch {
	case p.X < b.X || p.X >= b.X+b.Width:
		field = xf
	case p.Y < b.Y || p.Y >= b.Y+b.Height:
		field = yf
	default:
		return nil
	}
	return &fault.Error{Code: CodeOffScreen, Field: field,
		Message: fmt.Sprintf("%s: (%d,%d) is off screen; the screen is %dx%d, x %d..%d, y %d..%d",
			field, p.X, p.Y, b.Width, b.Height, b.X, b.X+b.Width-1, b.Y, b.Y+b.Height-1),
		Details: fmt.Sprintf("bounds: x %d..%d, y %d..%d", b.X, b.X+b.Width-1, b.Y, b.Y+b.Height-1)}
}

// RegionOnScreen checks a region lies within the screen; at is what its
// fields' names start with.
func RegionOnScreen(at string, r desktop.Rect, b desktop.Rect) error {
	if r.Width < 1 {
		return fault.Invalid(at+"width", "must be at least 1")
	}
	if r.Height < 1 {
		return fault.Invalid(at+"height", "must be at least 1")
	}
	if err := OnScreen(at+"x", at+"y", desktop.Point{X: r.X, Y: r.Y}, b); err != nil {
		return err
	}
	return OnScreen(at+"width", at+"height", desktop.Point{X: r.X + r.Width - 1, Y: r.Y + r.Height - 1}, b)
}
