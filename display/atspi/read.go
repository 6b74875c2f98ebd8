package atspi

import (
	"context"
	"sort"
	"strconv"
	"sync"

	"github.com/godbus/dbus/v5"

	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// The cost of reading a tree is D-Bus round trips: a toolkit answers one
// call at a time from its main loop, ~0.1 ms each. So a read asks each
// application for its Cache (every element's name, role, description,
// states, interfaces, parent and index in one answer), asks per element
// only what the cache lacks (screen extents, text, values, action names),
// and sends those calls all at once (pipelined on the connection, at most
// maxCalls unanswered) instead of one after the other. An element the
// cache does not hold (a toolkit without one, a table's lazily made cells,
// one added after the cache was last updated) is read with the
// per-element calls, in the same batches.

const (
	cachePath = dbus.ObjectPath("/org/a11y/atspi/cache")
	ifCache   = "org.a11y.atspi.Cache"
	// maxCalls bounds the calls of one read that are unanswered at once,
	// so that a huge tree does not flood an application's main loop.
	maxCalls = 128
)

// cacheItem is one element of Cache.GetItems' a((so)(so)(so)iiassusau).
type cacheItem struct {
	Self, App, Parent ref
	Index, Count      int32
	Interfaces        []string
	Name              string
	Role              uint32
	Description       string
	States            []uint32
}

// appCache is an application's cache answer: its elements by path and
// each parent's children by index.
type appCache struct {
	app   string
	items map[dbus.ObjectPath]*cacheItem
	kids  map[dbus.ObjectPath][]ref
}

// children answers the cached children of the element it, when the cache
// holds every one of them (ChildCount of them, at indexes 0..n-1).
func (c *appCache) children(it *cacheItem) ([]ref, bool) {
	kids := c.kids[it.Self.Path]
	if int32(len(kids)) != it.Count {
		return nil, false
	}
	for i, k := range kids {
		if c.items[k.Path].Index != int32(i) {
			return nil, false
		}
	}
	return kids, true
}

// cache fetches app's cache; nil when the application has none (a
// toolkit without the interface, or an ATK bridge that has not yet seen
// the event listener Connect registers).
func (b *Bus) cache(ctx context.Context, app string) *appCache {
	var items []cacheItem
	if err := b.conn.Object(app, cachePath).CallWithContext(ctx, ifCache+".GetItems", 0).Store(&items); err != nil || len(items) == 0 {
		return nil
	}
	c := &appCache{app: app, items: make(map[dbus.ObjectPath]*cacheItem, len(items)), kids: map[dbus.ObjectPath][]ref{}}
	for i := range items {
		it := &items[i]
		if it.Self.Name != app {
			continue
		}
		c.items[it.Self.Path] = it
		if it.Parent.Name == app {
			c.kids[it.Parent.Path] = append(c.kids[it.Parent.Path], it.Self)
		}
	}
	for _, kids := range c.kids {
		sort.Slice(kids, func(i, j int) bool { return c.items[kids[i].Path].Index < c.items[kids[j].Path].Index })
	}
	return c
}

// Apps lists the registered applications (those of pid when not 0) with
// their trees to depth levels (< 0: all).
func (b *Bus) Apps(ctx context.Context, pid, depth int) ([]desktop.AccessibleApp, error) {
	var apps []ref
	if err := b.call(ctx, ref{registryName, rootPath}, ifAccessible+".GetChildren", []any{&apps}); err != nil {
		return nil, b.busErr(err)
	}
	b.forget(apps)
	out := make([]desktop.AccessibleApp, len(apps))
	keep := make([]bool, len(apps))
	var wg sync.WaitGroup
	for i, a := range apps {
		wg.Go(func() {
			var p uint32
			if err := b.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, a.Name).Store(&p); err == nil {
				out[i].PID = int(p)
			}
			if pid != 0 && out[i].PID != pid {
				return
			}
			var c *appCache
			if depth != 0 {
				c = b.cache(ctx, a.Name)
			}
			n, err := b.read(ctx, a, depth, c)
			if err != nil {
				return // an application that quit while we read it is not listed
			}
			out[i].Root, keep[i] = n, true
		})
	}
	wg.Wait()
	res := []desktop.AccessibleApp{}
	for i := range out {
		if keep[i] {
			res = append(res, out[i])
		}
	}
	return res, nil
}

// Node reads one element without its children.
func (b *Bus) Node(ctx context.Context, id string) (desktop.AccessibleNode, error) {
	r, err := parseRef(id)
	if err != nil {
		return desktop.AccessibleNode{}, err
	}
	n, err := b.read(ctx, r, 0, nil)
	if err != nil && b.left(ctx, r, err) {
		return desktop.AccessibleNode{}, fault.NotFound("element", id)
	}
	if err != nil {
		return desktop.AccessibleNode{}, elementErr(id, err)
	}
	if n.Has("defunct") {
		return desktop.AccessibleNode{}, fault.NotFound("element", id)
	}
	return n, nil
}

// elem is an element being read.
type elem struct {
	r     ref
	depth int // levels below it still to read (< 0: all)
	n     desktop.AccessibleNode
	st    static
	known bool // st came from what the bus remembers
	role  uint32
	// roleNum: role is the cache's role number, whose name st.role still
	// needs when it is empty
	roleNum  bool
	children []ref
	kids     []*elem
	err      error // the element is left out (gone while read)

	props   map[string]dbus.Variant
	states  []uint32
	ifaces  []string
	acts    []struct{ Name, Description, Key string }
	extents struct{ X, Y, W, H int32 }
	value   dbus.Variant
}

// request is one call of a batch and where its answer goes.
type request struct {
	e      *elem
	method string
	args   []any
	out    []any
}

// read reads r and its descendants to depth levels (< 0: all), using the
// application's cache c when not nil. Level by level, it sends in one
// batch what the elements the cache lacks need (what they are, their
// children); then, in one batch for the whole tree, what every element
// adds (bounds, text, value, action names). A descendant that fails is
// left out; r failing is the error.
func (b *Bus) read(ctx context.Context, r ref, depth int, c *appCache) (desktop.AccessibleNode, error) {
	root := &elem{r: r, depth: depth}
	var all []*elem
	level := []*elem{root}
	for len(level) > 0 {
		var reqs []request
		for _, e := range level {
			all = append(all, e)
			reqs = b.describe(e, c, reqs)
		}
		if err := b.pipeline(ctx, reqs); err != nil {
			return desktop.AccessibleNode{}, err
		}
		var next []*elem
		for _, e := range level {
			if e.err != nil {
				continue
			}
			b.described(e)
			for _, k := range e.children {
				kid := &elem{r: k, depth: e.depth - 1}
				e.kids = append(e.kids, kid)
				next = append(next, kid)
			}
		}
		level = next
	}

	var reqs []request
	names := map[uint32]*elem{} // a role number's name is asked of one element
	for _, e := range all {
		if e.err != nil {
			continue
		}
		if e.roleNum && e.st.role == "" {
			if _, asked := names[e.role]; !asked {
				names[e.role] = e
				reqs = append(reqs, request{e, ifAccessible + ".GetRoleName", nil, []any{&e.st.role}})
			}
		}
		if e.st.has[ifAction] && e.st.actions == nil {
			reqs = append(reqs, request{e, ifAction + ".GetActions", nil, []any{&e.acts}})
		}
		if e.st.has[ifComponent] {
			reqs = append(reqs, request{e, ifComponent + ".GetExtents", []any{coordScreen}, []any{&e.extents}})
		}
		switch {
		case e.st.has[ifText]:
			reqs = append(reqs, request{e, ifText + ".GetText", []any{int32(0), int32(-1)}, []any{&e.n.Value}})
		case e.st.has[ifValue]:
			reqs = append(reqs, request{e, "org.freedesktop.DBus.Properties.Get", []any{ifValue, "CurrentValue"}, []any{&e.value}})
		}
	}
	if err := b.pipeline(ctx, reqs); err != nil {
		return desktop.AccessibleNode{}, err
	}
	for num, e := range names {
		if e.err == nil {
			b.rememberRole(r.Name, num, e.st.role)
		}
	}
	for _, e := range all {
		if e.err != nil {
			continue
		}
		if e.roleNum && e.st.role == "" {
			e.st.role, _ = b.roleName(r.Name, e.role)
		}
		if e.st.has[ifComponent] {
			e.n.Bounds = &desktop.Rect{X: int(e.extents.X), Y: int(e.extents.Y), Width: int(e.extents.W), Height: int(e.extents.H)}
		}
		if f, ok := e.value.Value().(float64); ok {
			e.n.Value = strconv.FormatFloat(f, 'f', -1, 64)
		}
		if e.st.actions == nil {
			e.st.actions = []string{}
			for _, a := range e.acts {
				e.st.actions = append(e.st.actions, a.Name)
			}
		}
		if !e.known && e.st.role != "" {
			b.remember(e.r, e.st)
		}
	}
	if root.err != nil {
		return desktop.AccessibleNode{}, root.err
	}
	return root.build(), nil
}

// describe fills what the cache c says of e, and adds to reqs the calls
// for what it does not.
func (b *Bus) describe(e *elem, c *appCache, reqs []request) []request {
	e.n = desktop.AccessibleNode{ID: e.r.id(), States: []string{}, Actions: []string{}, Children: []desktop.AccessibleNode{}}
	e.st, e.known = b.static(e.r)
	var it *cacheItem
	if c != nil && e.r.Name == c.app {
		it = c.items[e.r.Path]
	}
	if it == nil {
		reqs = append(reqs, request{e, "org.freedesktop.DBus.Properties.GetAll", []any{ifAccessible}, []any{&e.props}},
			request{e, ifAccessible + ".GetState", nil, []any{&e.states}})
		if !e.known {
			reqs = append(reqs, request{e, ifAccessible + ".GetRoleName", nil, []any{&e.st.role}},
				request{e, ifAccessible + ".GetInterfaces", nil, []any{&e.ifaces}})
		}
		if e.depth != 0 {
			reqs = append(reqs, request{e, ifAccessible + ".GetChildren", nil, []any{&e.children}})
		}
		return reqs
	}
	e.n.Name, e.n.Description, e.states = it.Name, it.Description, it.States
	if !e.known {
		e.st.has = interfaceSet(it.Interfaces)
		e.role, e.roleNum = it.Role, true
		e.st.role, _ = b.roleName(e.r.Name, it.Role)
	}
	if e.depth != 0 && it.Count > 0 {
		if kids, ok := c.children(it); ok {
			e.children = kids
		} else {
			reqs = append(reqs, request{e, ifAccessible + ".GetChildren", nil, []any{&e.children}})
		}
	}
	return reqs
}

// described takes in the answers to describe's calls.
func (b *Bus) described(e *elem) {
	if e.props != nil {
		e.n.Name, _ = e.props["Name"].Value().(string)
		e.n.Description, _ = e.props["Description"].Value().(string)
	}
	if !e.known && e.ifaces != nil {
		e.st.has = interfaceSet(e.ifaces)
	}
	e.n.States = stateNames(e.states)
}

func interfaceSet(ifaces []string) map[string]bool {
	has := make(map[string]bool, len(ifaces))
	for _, i := range ifaces {
		has[i] = true
	}
	return has
}

// build is the node of e and its descendants that were read.
func (e *elem) build() desktop.AccessibleNode {
	n := e.n
	n.Role = e.st.role
	if len(e.st.actions) > 0 {
		n.Actions = e.st.actions
	}
	for _, k := range e.kids {
		if k.err == nil {
			n.Children = append(n.Children, k.build())
		}
	}
	return n
}

// pipeline sends reqs on the connection at once (at most maxCalls
// unanswered) and stores their answers; a call's error is its element's.
// It answers ctx's error when ctx ends first.
func (b *Bus) pipeline(ctx context.Context, reqs []request) error {
	if len(reqs) == 0 {
		return nil
	}
	// every call sent is answered on done exactly once (its reply, its
	// error, ctx's end or the connection's loss), so done never fills
	done := make(chan *dbus.Call, min(len(reqs), maxCalls))
	owner := make(map[*dbus.Call]*request, cap(done))
	sent, unanswered := 0, 0
	for sent < len(reqs) || unanswered > 0 {
		for sent < len(reqs) && unanswered < cap(done) {
			q := &reqs[sent]
			sent++
			if q.e.err != nil {
				continue
			}
			owner[b.conn.Object(q.e.r.Name, q.e.r.Path).GoWithContext(ctx, q.method, 0, done, q.args...)] = q
			unanswered++
		}
		if unanswered == 0 {
			break
		}
		c := <-done
		unanswered--
		q := owner[c]
		delete(owner, c)
		err := c.Err
		if err == nil && len(q.out) > 0 {
			err = c.Store(q.out...)
		}
		if err != nil && q.e.err == nil {
			q.e.err = err
		}
	}
	return ctx.Err()
}
