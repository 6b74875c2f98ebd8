// Package atspi owns the display service's connection to the AT-SPI2
// accessibility bus: it reads applications' accessibility trees and acts
// on their elements over D-Bus (godbus), for display/api's Accessibility.
// It is pure Go; at-spi2-core (the bus launcher and registry) and the
// toolkits' bridges (GTK's atk-bridge, Qt, Chromium) do the rest.
package atspi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"

	"deckhand/display/api"
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
	// inflight bounds the elements whose calls are in flight at once, so a
	// huge tree does not flood an application's main loop
	inflight chan struct{}

	mu    sync.Mutex
	known map[ref]static
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
	return &Bus{conn: conn, inflight: make(chan struct{}, 64), known: map[ref]static{}}, nil
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

func (r ref) id() string { return api.ElementID(r.Name, string(r.Path)) }

func parseRef(id string) (ref, error) {
	bus, path, err := api.ParseElementID(id)
	if err != nil {
		return ref{}, err
	}
	if !dbus.ObjectPath(path).IsValid() {
		return ref{}, fault.Invalid("elementId", "must be an element id from the tree, got %q", id)
	}
	return ref{Name: bus, Path: dbus.ObjectPath(path)}, nil
}

// call makes one method call, within the in-flight bound.
func (b *Bus) call(ctx context.Context, r ref, method string, out []any, args ...any) error {
	select {
	case b.inflight <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.inflight }()
	c := b.conn.Object(r.Name, r.Path).CallWithContext(ctx, method, 0, args...)
	if c.Err != nil {
		return c.Err
	}
	if len(out) > 0 {
		return c.Store(out...)
	}
	return nil
}

// Apps lists the registered applications (those of pid when not 0) with
// their trees to depth levels (< 0: all).
func (b *Bus) Apps(ctx context.Context, pid, depth int) ([]api.AccessibleApp, error) {
	var apps []ref
	if err := b.call(ctx, ref{registryName, rootPath}, ifAccessible+".GetChildren", []any{&apps}); err != nil {
		return nil, b.busErr(err)
	}
	b.forget(apps)
	out := make([]api.AccessibleApp, len(apps))
	keep := make([]bool, len(apps))
	var wg sync.WaitGroup
	for i, a := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p uint32
			if err := b.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, a.Name).Store(&p); err == nil {
				out[i].PID = int(p)
			}
			if pid != 0 && out[i].PID != pid {
				return
			}
			n, err := b.read(ctx, a, depth)
			if err != nil {
				return // an application that quit while we read it is not listed
			}
			out[i].Root, keep[i] = n, true
		}()
	}
	wg.Wait()
	res := []api.AccessibleApp{}
	for i := range out {
		if keep[i] {
			res = append(res, out[i])
		}
	}
	return res, nil
}

// Node reads one element without its children.
func (b *Bus) Node(ctx context.Context, id string) (api.AccessibleNode, error) {
	r, err := parseRef(id)
	if err != nil {
		return api.AccessibleNode{}, err
	}
	n, err := b.read(ctx, r, 0)
	if err != nil {
		return api.AccessibleNode{}, elementErr(id, err)
	}
	if n.Has("defunct") {
		return api.AccessibleNode{}, fault.NotFound("element", id)
	}
	return n, nil
}

// read reads r and its descendants to depth levels (< 0: all). An
// element's calls are sent at once (two rounds: what it is, then what its
// interfaces add and its children) and the children are read concurrently,
// so the time is a few round trips per level, not per element; at most
// cap(inflight) elements have calls in flight at once.
func (b *Bus) read(ctx context.Context, r ref, depth int) (api.AccessibleNode, error) {
	n := api.AccessibleNode{ID: r.id(), States: []string{}, Actions: []string{}, Children: []api.AccessibleNode{}}
	select {
	case b.inflight <- struct{}{}:
	case <-ctx.Done():
		return n, ctx.Err()
	}
	children, err := b.readOne(ctx, r, depth, &n)
	<-b.inflight
	if err != nil {
		return n, err
	}
	kids := make([]api.AccessibleNode, len(children))
	ok := make([]bool, len(children))
	g := &group{}
	for i, c := range children {
		g.do(func() error {
			k, err := b.read(ctx, c, depth-1)
			if err == nil {
				kids[i], ok[i] = k, true
			} else if ctx.Err() != nil {
				return err
			}
			return nil // a child that went away while we read is left out
		})
	}
	if err := g.wait(); err != nil {
		return n, err
	}
	for i := range kids {
		if ok[i] {
			n.Children = append(n.Children, kids[i])
		}
	}
	return n, nil
}

// readOne fills n from r's own calls and answers r's children (when depth
// asks for them).
func (b *Bus) readOne(ctx context.Context, r ref, depth int, n *api.AccessibleNode) ([]ref, error) {
	obj := b.conn.Object(r.Name, r.Path)
	send := func(method string, args ...any) *dbus.Call {
		return obj.GoWithContext(ctx, method, 0, make(chan *dbus.Call, 1), args...)
	}
	var (
		props  map[string]dbus.Variant
		states []uint32
		ifaces []string
	)
	st, known := b.static(r)
	calls := []pending{{send("org.freedesktop.DBus.Properties.GetAll", ifAccessible), []any{&props}},
		{send(ifAccessible + ".GetState"), []any{&states}}}
	if !known {
		calls = append(calls, pending{send(ifAccessible + ".GetRoleName"), []any{&st.role}},
			pending{send(ifAccessible + ".GetInterfaces"), []any{&ifaces}})
	}
	if err := awaitAll(ctx, calls); err != nil {
		return nil, err
	}
	if !known {
		st.has = map[string]bool{}
		for _, i := range ifaces {
			st.has[i] = true
		}
	}
	n.Name, _ = props["Name"].Value().(string)
	n.Description, _ = props["Description"].Value().(string)
	count, _ := props["ChildCount"].Value().(int32)
	n.States = stateNames(states)

	var (
		children []ref
		acts     []struct{ Name, Description, Key string }
		extents  struct{ X, Y, W, H int32 }
		value    dbus.Variant
	)
	calls = calls[:0]
	if depth != 0 && count > 0 {
		calls = append(calls, pending{send(ifAccessible + ".GetChildren"), []any{&children}})
	}
	if st.has[ifAction] && !known {
		calls = append(calls, pending{send(ifAction + ".GetActions"), []any{&acts}})
	}
	if st.has[ifComponent] {
		calls = append(calls, pending{send(ifComponent+".GetExtents", coordScreen), []any{&extents}})
	}
	switch {
	case st.has[ifText]:
		calls = append(calls, pending{send(ifText+".GetText", int32(0), int32(-1)), []any{&n.Value}})
	case st.has[ifValue]:
		calls = append(calls, pending{send("org.freedesktop.DBus.Properties.Get", ifValue, "CurrentValue"), []any{&value}})
	}
	if err := awaitAll(ctx, calls); err != nil {
		return nil, err
	}
	if st.has[ifComponent] {
		n.Bounds = &api.Rect{X: int(extents.X), Y: int(extents.Y), Width: int(extents.W), Height: int(extents.H)}
	}
	if f, ok := value.Value().(float64); ok {
		n.Value = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if !known {
		st.actions = []string{}
		for _, a := range acts {
			st.actions = append(st.actions, a.Name)
		}
		b.remember(r, st)
	}
	n.Role = st.role
	if len(st.actions) > 0 {
		n.Actions = st.actions
	}
	return children, nil
}

// pending is a call in flight and where its answer goes.
type pending struct {
	c   *dbus.Call
	out []any
}

// awaitAll waits for every call and stores their answers; the first error
// is the answer (the other calls' replies still arrive, into their own
// buffered channels).
func awaitAll(ctx context.Context, calls []pending) error {
	for _, p := range calls {
		select {
		case <-p.c.Done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if p.c.Err != nil {
			return p.c.Err
		}
		if err := p.c.Store(p.out...); err != nil {
			return err
		}
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
}

// group runs functions concurrently and keeps the first error.
type group struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

func (g *group) do(fn func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := fn(); err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
		}
	}()
}

func (g *group) wait() error {
	g.wg.Wait()
	return g.err
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
	has := map[string]bool{}
	for _, i := range ifaces {
		has[i] = true
	}
	switch {
	case has[ifEditable]:
		var done bool
		if err := b.call(ctx, r, ifEditable+".SetTextContents", []any{&done}, value); err != nil {
			return elementErr(id, err)
		}
		if !done {
			return fault.Errorf(fault.CodeConflict, "element %s refused the text (is it read-only?)", id).WithDetails("elementId")
		}
		return nil
	case has[ifValue]:
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

func (b *Bus) busErr(err error) error {
	return &fault.Error{Code: api.CodeNoAccessibility, Message: "the accessibility registry does not answer: " + err.Error(),
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
