// Package atspi owns the display service's connection to the AT-SPI2
// accessibility bus: it reads applications' accessibility trees and acts
// on their elements over D-Bus (godbus), for display/desktop's Accessibility.
// It is pure Go; at-spi2-core (the bus launcher and registry) and the
// toolkits' bridges (GTK's atk-bridge, Qt, Chromium) do the rest.
package atspi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"

	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

const (
	registryName = "org.a11y.atspi.Registry"
	rootPath     = "/org/a11y/atspi/accessible/root"
	ifAccessible = "org.a11y.atspi.Accessible"
	ifComponent  = "org.a11y.atspi.Component"
	ifAction     = "org.a11y.atspi.Action"
	ifText       = "org.a11y.atspi.Text"
	ifEditable   = "org.a11y.atspi.EditableText"
	ifValue      = "org.a11y.atspi.Value"
	coordScreen  = uint32(0)
)

// Bus is a connection to the accessibility bus.
type Bus struct {
	conn *dbus.Conn

	mu    sync.Mutex
	known map[ref]static
	// roles are the role names of applications' role numbers (the cache
	// says an element's role by number; GetRoleName by name)
	roles map[string]map[uint32]string
}

// Address finds the accessibility bus: AT_SPI_BUS_ADDRESS, else what the
// session bus (DBUS_SESSION_BUS_ADDRESS) answers (SessionAddress).
func Address(ctx context.Context) (string, error) {
	if a := os.Getenv("AT_SPI_BUS_ADDRESS"); a != "" {
		return a, nil
	}
	sess := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if sess == "" {
		return "", errors.New("neither AT_SPI_BUS_ADDRESS nor DBUS_SESSION_BUS_ADDRESS is set")
	}
	return SessionAddress(ctx, sess)
}

// SessionAddress asks the session bus at session for the accessibility
// bus: its org.a11y.Bus (at-spi-bus-launcher) starts on demand.
func SessionAddress(ctx context.Context, session string) (string, error) {
	conn, err := dbus.Connect(session, dbus.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("session bus: %w", err)
	}
	defer conn.Close()
	var addr string
	if err := conn.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return "", fmt.Errorf("org.a11y.Bus.GetAddress on the session bus (is at-spi2-core installed?): %w", err)
	}
	return addr, nil
}

// Connect connects to the accessibility bus at addr (Address finds it);
// ctx bounds the connecting, not the connection.
func Connect(ctx context.Context, addr string) (*Bus, error) {
	type result struct {
		conn *dbus.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := dbus.Connect(addr)
		done <- result{conn, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		go func() {
			if r := <-done; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, fmt.Errorf("accessibility bus %s: %w", addr, ctx.Err())
	}
	conn, err := r.conn, r.err
	if err != nil {
		return nil, fmt.Errorf("accessibility bus %s: %w", addr, err)
	}
	b := &Bus{conn: conn, known: map[ref]static{}, roles: map[string]map[uint32]string{}}
	b.listen(ctx)
	return b, nil
}

// listenEvent is the event the bus listens for: one GTK and the other ATK
// toolkits never send, so it costs them nothing. What matters is that a
// client listens at all: the ATK bridge (at-spi2-core's atk-adaptor) only
// serves its Cache (read uses it) once a client has registered an event
// listener with the registry, which it learns when it starts
// (GetRegisteredEvents) or, when it runs already, from the registry's
// EventListenerRegistered signal. The registry drops the listener when the
// connection closes.
const listenEvent = "window:desktop-create"

// listen registers listenEvent with the registry. A registry that refuses
// leaves the bus without caches: trees are then read element by element.
func (b *Bus) listen(ctx context.Context) {
	reg := b.conn.Object(registryName, "/org/a11y/atspi/registry")
	if reg.CallWithContext(ctx, "org.a11y.atspi.Registry.RegisterEvent", 0, listenEvent, []string{}, "").Err != nil {
		// older registries take the event alone
		reg.CallWithContext(ctx, "org.a11y.atspi.Registry.RegisterEvent", 0, listenEvent)
	}
}

// Done is closed when the connection is lost.
func (b *Bus) Done() <-chan struct{} { return b.conn.Context().Done() }

// Close closes the connection.
func (b *Bus) Close() error { return b.conn.Close() }

// ref is an object on the bus: (so) in AT-SPI's signatures.
type ref struct {
	Name string
	Path dbus.ObjectPath
}

func (r ref) id() string { return desktop.ElementID(r.Name, string(r.Path)) }

func parseRef(id string) (ref, error) {
	bus, path, err := desktop.ParseElementID(id)
	if err != nil {
		return ref{}, err
	}
	if !dbus.ObjectPath(path).IsValid() {
		return ref{}, fault.Invalid("elementId", "must be an element id from the tree, got %q", id)
	}
	return ref{Name: bus, Path: dbus.ObjectPath(path)}, nil
}

// call makes one method call.
func (b *Bus) call(ctx context.Context, r ref, method string, out []any, args ...any) error {
	c := b.conn.Object(r.Name, r.Path).CallWithContext(ctx, method, 0, args...)
	if c.Err != nil {
		return c.Err
	}
	if len(out) > 0 {
		return c.Store(out...)
	}
	return nil
}

// static is what does not change in an element's life: its role, its
// interfaces and its actions' names. An object path names one element for
// the life of its application's connection, and a unique bus name is
// never reused, so the bus remembers them by id and a tree read asks each
// element only for what can change (name, states, bounds, value,
// children).
type static struct {
	role    string
	has     map[string]bool
	actions []string
}

// maxRemembered bounds the memory: past it the cache starts over.
const maxRemembered = 100000

func (b *Bus) static(r ref) (static, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.known[r]
	return st, ok
}

func (b *Bus) remember(r ref, st static) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.known) >= maxRemembered {
		b.known = map[ref]static{}
	}
	b.known[r] = st
}

// forget drops what is remembered of applications no longer registered.
func (b *Bus) forget(apps []ref) {
	live := map[string]bool{}
	for _, a := range apps {
		live[a.Name] = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.known {
		if !live[r.Name] {
			delete(b.known, r)
		}
	}
	for app := range b.roles {
		if !live[app] {
			delete(b.roles, app)
		}
	}
}

func (b *Bus) roleName(app string, role uint32) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	name, ok := b.roles[app][role]
	return name, ok
}

func (b *Bus) rememberRole(app string, role uint32, name string) {
	if name == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.roles[app] == nil {
		b.roles[app] = map[uint32]string{}
	}
	b.roles[app][role] = name
}

// DoAction invokes the element's action called name.
func (b *Bus) DoAction(ctx context.Context, id, name string) error {
	r, err := parseRef(id)
	if err != nil {
		return err
	}
	var acts []struct{ Name, Description, Key string }
	if err := b.call(ctx, r, ifAction+".GetActions", []any{&acts}); err != nil {
		return elementErr(id, err)
	}
	for i, a := range acts {
		if a.Name == name {
			var done bool
			if err := b.call(ctx, r, ifAction+".DoAction", []any{&done}, int32(i)); err != nil {
				if b.left(ctx, r, err) {
					return desktop.ErrTargetClosed
				}
				return elementErr(id, err)
			}
			if !done {
				return fault.Errorf(fault.CodeConflict, "element %s refused its action %q", id, name).WithDetails("elementId")
			}
			return nil
		}
	}
	return fault.Invalid("name", "element %s has no action %q", id, name)
}

// GrabFocus gives the element the keyboard focus.
func (b *Bus) GrabFocus(ctx context.Context, id string) error {
	r, err := parseRef(id)
	if err != nil {
		return err
	}
	var done bool
	if err := b.call(ctx, r, ifComponent+".GrabFocus", []any{&done}); err != nil {
		return elementErr(id, err)
	}
	if !done {
		return fault.Errorf(fault.CodeConflict, "element %s cannot take the focus", id).WithDetails("elementId")
	}
	return nil
}

// SetValue replaces an editable text's contents or sets a range's value.
func (b *Bus) SetValue(ctx context.Context, id, value string) error {
	r, err := parseRef(id)
	if err != nil {
		return err
	}
	var ifaces []string
	if err := b.call(ctx, r, ifAccessible+".GetInterfaces", []any{&ifaces}); err != nil {
		return elementErr(id, err)
	}
	switch {
	case slices.Contains(ifaces, ifEditable):
		var done bool
		if err := b.call(ctx, r, ifEditable+".SetTextContents", []any{&done}, value); err != nil {
			return elementErr(id, err)
		}
		if !done {
			return fault.Errorf(fault.CodeConflict, "element %s refused the text (is it read-only?)", id).WithDetails("elementId")
		}
		return nil
	case slices.Contains(ifaces, ifValue):
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return fault.Invalid("value", "must be a number for a %s element, got %q", "range", value)
		}
		if err := b.call(ctx, r, "org.freedesktop.DBus.Properties.Set", nil, ifValue, "CurrentValue", dbus.MakeVariant(f)); err != nil {
			return elementErr(id, err)
		}
		return nil
	}
	return fault.Errorf(fault.CodeConflict, "element %s has neither editable text nor a value", id).WithDetails("elementId")
}

// elementErr turns a D-Bus error about an element into the service's:
// an element (or application) that is gone is 404.
func elementErr(id string, err error) error {
	var pe *fault.Error
	if errors.As(err, &pe) {
		return pe
	}
	var de dbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.ServiceUnknown",
			"org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.NameHasNoOwner":
			return fault.NotFound("element", id)
		}
	}
	return fault.Errorf(fault.CodeBackend, "accessibility bus: %v", err).WithDetails("elementId")
}

// left reports whether err is the element's application leaving the bus
// before it replied: an application that exits inside its action (a
// dialog's OK), or while the element is read right after, never replies,
// and the bus answers NoReply for it. A NoReply while the application is
// still on the bus is a timeout, not this.
func (b *Bus) left(ctx context.Context, r ref, err error) bool {
	var de dbus.Error
	if !errors.As(err, &de) || de.Name != "org.freedesktop.DBus.Error.NoReply" {
		return false
	}
	var has bool
	if b.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, r.Name).Store(&has) != nil {
		return false
	}
	return !has
}

func (b *Bus) busErr(err error) error {
	return &fault.Error{Code: desktop.CodeNoAccessibility, Message: "the accessibility registry does not answer: " + err.Error(),
		Details: "at-spi2-registryd runs on the accessibility bus"}
}

// stateNames turns AT-SPI's state bit set (two 32-bit words) into names.
func stateNames(words []uint32) []string {
	out := []string{}
	for w, bits := range words {
		for i := 0; i < 32; i++ {
			if bits&(1<<i) == 0 {
				continue
			}
			if k := w*32 + i; k < len(states) && states[k] != "" {
				out = append(out, states[k])
			}
		}
	}
	return out
}

// states are AtspiStateType's names, by bit.
var states = []string{"invalid", "active", "armed", "busy", "checked", "collapsed", "defunct", "editable", "enabled",
	"expandable", "expanded", "focusable", "focused", "has-tooltip", "horizontal", "iconified", "modal", "multi-line",
	"multiselectable", "opaque", "pressed", "resizable", "selectable", "selected", "sensitive", "showing",
	"single-line", "stale", "transient", "vertical", "visible", "manages-descendants", "indeterminate", "required",
	"truncated", "animated", "invalid-entry", "supports-autocompletion", "selectable-text", "is-default", "visited",
	"checkable", "has-popup", "read-only"}

// scrollAnywhere is ATSPI_SCROLL_ANYWHERE: the least scrolling that shows
// the element.
const scrollAnywhere = uint32(6)

// ScrollIntoView scrolls the element into view: the toolkit's own
// Component.ScrollTo when it does it (GTK 4, Qt, browsers), else the
// scroll bars of every scroll pane around the element (GTK 3's answer
// false), each by the least that shows the element in the pane.
func (b *Bus) ScrollIntoView(ctx context.Context, id string) error {
	r, err := parseRef(id)
	if err != nil {
		return err
	}
	var done bool
	if err := b.call(ctx, r, ifComponent+".ScrollTo", []any{&done}, scrollAnywhere); err == nil && done {
		return nil
	} else if err != nil && !unsupported(err) {
		return elementErr(id, err)
	}
	panes := 0
	at := r
	for range 64 { // deeper is a cycle
		var v dbus.Variant
		if err := b.call(ctx, at, "org.freedesktop.DBus.Properties.Get", []any{&v}, ifAccessible, "Parent"); err != nil {
			return elementErr(id, err)
		}
		var parent ref
		if err := dbus.Store([]any{v.Value()}, &parent); err != nil || parent.Name != r.Name || parent.Path == rootPath {
			break
		}
		at = parent
		var role string
		if err := b.call(ctx, at, ifAccessible+".GetRoleName", []any{&role}); err != nil {
			return elementErr(id, err)
		}
		if role != "scroll pane" {
			continue
		}
		panes++
		if err := b.scrollPane(ctx, r, at); err != nil {
			return elementErr(id, err)
		}
	}
	if panes == 0 {
		return fault.Errorf(fault.CodeConflict, "element %s cannot be scrolled: its toolkit does not scroll it "+
			"(Component.ScrollTo) and no scroll pane holds it", id).WithDetails("elementId")
	}
	return nil
}

// unsupported reports whether err says the method is not there.
func unsupported(err error) bool {
	var de dbus.Error
	return errors.As(err, &de) && (de.Name == "org.freedesktop.DBus.Error.UnknownMethod" ||
		de.Name == "org.freedesktop.DBus.Error.UnknownInterface")
}

// scrollPane moves the scroll bars of pane so that el is inside the
// pane's extents: on each axis by the least that shows it, its start
// first when it is larger than the pane.
func (b *Bus) scrollPane(ctx context.Context, el, pane ref) error {
	type box struct{ X, Y, W, H int32 }
	var e, p box
	if err := b.call(ctx, el, ifComponent+".GetExtents", []any{&e}, coordScreen); err != nil {
		return err
	}
	if err := b.call(ctx, pane, ifComponent+".GetExtents", []any{&p}, coordScreen); err != nil {
		return err
	}
	var kids []ref
	if err := b.call(ctx, pane, ifAccessible+".GetChildren", []any{&kids}); err != nil {
		return err
	}
	for _, k := range kids {
		var role string
		var states []uint32
		if b.call(ctx, k, ifAccessible+".GetRoleName", []any{&role}) != nil || role != "scroll bar" ||
			b.call(ctx, k, ifAccessible+".GetState", []any{&states}) != nil {
			continue
		}
		var delta int32
		switch st := stateNames(states); {
		case slices.Contains(st, "vertical"):
			delta = least(e.Y, e.H, p.Y, p.H)
		case slices.Contains(st, "horizontal"):
			delta = least(e.X, e.W, p.X, p.W)
		}
		if delta == 0 {
			continue
		}
		var vals map[string]dbus.Variant
		if err := b.call(ctx, k, "org.freedesktop.DBus.Properties.GetAll", []any{&vals}, ifValue); err != nil {
			return err
		}
		cur, _ := vals["CurrentValue"].Value().(float64)
		lo, _ := vals["MinimumValue"].Value().(float64)
		hi, _ := vals["MaximumValue"].Value().(float64)
		to := min(max(cur+float64(delta), lo), hi)
		if err := b.call(ctx, k, "org.freedesktop.DBus.Properties.Set", nil, ifValue, "CurrentValue", dbus.MakeVariant(to)); err != nil {
			return err
		}
	}
	return nil
}

// least is how far to scroll (in pixels, + toward the end) so that the
// span [at, at+size) is inside [view, view+vsize): 0 when it is, its
// start at the view's when it comes before or is larger than the view,
// else its end at the view's end.
func least(at, size, view, vsize int32) int32 {
	switch {
	case at < view || size > vsize:
		return at - view
	case at+size > view+vsize:
		return at + size - (view + vsize)
	}
	return 0
}
