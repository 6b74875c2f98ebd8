//go:build linux && cgo

package x11

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"deckhand/display/desktop"
)

// clipboard owns and reads X selections through a connection and an
// unmapped window of its own, whose event loop answers other clients'
// SelectionRequests for as long as the service holds the clipboard (X has
// no clipboard storage: the owner serves every paste). Large transfers, in
// both directions, use the ICCCM INCR protocol.
type clipboard struct {
	log  *slog.Logger
	conn *xgb.Conn
	win  xproto.Window
	*atomCache

	mu   sync.Mutex // guards data and out
	data map[xproto.Atom]desktop.Clipboard
	out  map[incrKey]*incrOut

	readMu  sync.Mutex // one read at a time
	notify  chan xproto.SelectionNotifyEvent
	propNew chan struct{}

	chunk int
	done  chan struct{}
}

type incrKey struct {
	win  xproto.Window
	prop xproto.Atom
}

type incrOut struct {
	data   []byte
	typ    xproto.Atom
	offset int
}

func newClipboard(display string, log *slog.Logger) (*clipboard, error) {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, err
	}
	c := &clipboard{log: log, conn: conn, atomCache: newAtomCache(conn),
		data: map[xproto.Atom]desktop.Clipboard{}, out: map[incrKey]*incrOut{},
		notify: make(chan xproto.SelectionNotifyEvent, 1), propNew: make(chan struct{}, 64), done: make(chan struct{})}
	setup := xproto.Setup(conn)
	screen := setup.DefaultScreen(conn)
	// stay well under the maximum request size (in 4-byte units)
	c.chunk = min(int(setup.MaximumRequestLength)*4-1024, 256<<10)
	wid, err := xproto.NewWindowId(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	err = xproto.CreateWindowChecked(conn, 0, wid, screen.Root, -10, -10, 1, 1, 0,
		xproto.WindowClassInputOnly, 0, xproto.CwEventMask, []uint32{xproto.EventMaskPropertyChange}).Check()
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.win = wid
	name := "deckhand-clipboard"
	xproto.ChangeProperty(conn, xproto.PropModeReplace, wid, xproto.AtomWmName, xproto.AtomString, 8, uint32(len(name)), []byte(name))
	go c.loop()
	return c, nil
}

func (c *clipboard) close() {
	c.conn.Close()
	<-c.done
}

// atomName is a's name, "" when the server cannot name it.
func (c *clipboard) atomName(a xproto.Atom) string {
	n, _ := c.lookupName(a)
	return n
}

var textTargets = []string{"UTF8_STRING", "text/plain;charset=utf-8", "text/plain", "STRING", "TEXT"}

func (c *clipboard) loop() {
	defer close(c.done)
	for {
		ev, xerr := c.conn.WaitForEvent()
		if ev == nil && xerr == nil {
			return
		}
		switch e := ev.(type) {
		case xproto.SelectionRequestEvent:
			c.serve(e)
		case xproto.SelectionClearEvent:
			c.mu.Lock()
			delete(c.data, e.Selection)
			c.mu.Unlock()
		case xproto.SelectionNotifyEvent:
			select {
			case c.notify <- e:
			default:
			}
		case xproto.PropertyNotifyEvent:
			if e.Window == c.win && e.State == xproto.PropertyNewValue {
				select {
				case c.propNew <- struct{}{}:
				default:
				}
			} else if e.State == xproto.PropertyDelete {
				c.sendNextChunk(incrKey{e.Window, e.Atom})
			}
		}
	}
}

// serve answers one paste request.
func (c *clipboard) serve(e xproto.SelectionRequestEvent) {
	prop := cmp.Or(e.Property, e.Target) // obsolete clients name no property
	c.mu.Lock()
	clip, ok := c.data[e.Selection]
	c.mu.Unlock()
	reply := xproto.SelectionNotifyEvent{Time: e.Time, Requestor: e.Requestor, Selection: e.Selection,
		Target: e.Target, Property: 0}
	if ok {
		target := c.atomName(e.Target)
		switch {
		case target == "TARGETS":
			list := []string{"TARGETS", "TIMESTAMP"}
			if clip.Image != nil {
				list = append(list, clip.MIME)
			} else {
				list = append(list, textTargets...)
			}
			buf := make([]byte, 4*len(list))
			for i, n := range list {
				binary.LittleEndian.PutUint32(buf[i*4:], uint32(c.atom(n)))
			}
			xproto.ChangeProperty(c.conn, xproto.PropModeReplace, e.Requestor, prop, xproto.AtomAtom, 32, uint32(len(list)), buf)
			reply.Property = prop
		case target == "TIMESTAMP":
			buf := make([]byte, 4)
			xproto.ChangeProperty(c.conn, xproto.PropModeReplace, e.Requestor, prop, xproto.AtomInteger, 32, 1, buf)
			reply.Property = prop
		case clip.Image == nil && slices.Contains(textTargets, target):
			typ := c.atom("UTF8_STRING")
			if target == "STRING" {
				typ = xproto.AtomString
			}
			c.put(e.Requestor, prop, typ, []byte(clip.Text))
			reply.Property = prop
		case clip.Image != nil && target == clip.MIME:
			c.put(e.Requestor, prop, e.Target, clip.Image)
			reply.Property = prop
		}
	}
	xproto.SendEvent(c.conn, false, e.Requestor, 0, string(reply.Bytes()))
}

// put writes data to the requestor's property, with INCR when it is large.
func (c *clipboard) put(w xproto.Window, prop, typ xproto.Atom, data []byte) {
	if len(data) <= c.chunk {
		xproto.ChangeProperty(c.conn, xproto.PropModeReplace, w, prop, typ, 8, uint32(len(data)), data)
		return
	}
	c.mu.Lock()
	c.out[incrKey{w, prop}] = &incrOut{data: data, typ: typ}
	c.mu.Unlock()
	xproto.ChangeWindowAttributes(c.conn, w, xproto.CwEventMask, []uint32{xproto.EventMaskPropertyChange})
	size := make([]byte, 4)
	binary.LittleEndian.PutUint32(size, uint32(len(data)))
	xproto.ChangeProperty(c.conn, xproto.PropModeReplace, w, prop, c.atom("INCR"), 32, 1, size)
}

// sendNextChunk continues an INCR transfer after the requestor deleted
// the property; an empty chunk ends it.
func (c *clipboard) sendNextChunk(k incrKey) {
	c.mu.Lock()
	t, ok := c.out[k]
	if !ok {
		c.mu.Unlock()
		return
	}
	end := min(t.offset+c.chunk, len(t.data))
	part := t.data[t.offset:end]
	t.offset = end
	if len(part) == 0 {
		delete(c.out, k)
	}
	c.mu.Unlock()
	xproto.ChangeProperty(c.conn, xproto.PropModeReplace, k.win, k.prop, t.typ, 8, uint32(len(part)), part)
	if len(part) == 0 {
		xproto.ChangeWindowAttributes(c.conn, k.win, xproto.CwEventMask, []uint32{0})
	}
}

// set takes ownership of CLIPBOARD.
func (c *clipboard) set(clip desktop.Clipboard) error {
	sel := c.atom("CLIPBOARD")
	c.mu.Lock()
	c.data[sel] = clip
	c.mu.Unlock()
	if err := xproto.SetSelectionOwnerChecked(c.conn, c.win, sel, 0).Check(); err != nil {
		return err
	}
	r, err := xproto.GetSelectionOwner(c.conn, sel).Reply()
	if err != nil {
		return err
	}
	if r.Owner != c.win {
		return errors.New("another client kept the clipboard")
	}
	return nil
}

// get reads a selection: its targets, then an image or text.
func (c *clipboard) get(ctx context.Context, name string) (desktop.Clipboard, error) {
	sel := c.atom(name)
	if r, err := xproto.GetSelectionOwner(c.conn, sel).Reply(); err != nil {
		return desktop.Clipboard{}, err
	} else if r.Owner == 0 {
		return desktop.Clipboard{}, nil // nobody holds it: empty
	} else if r.Owner == c.win {
		c.mu.Lock()
		clip := c.data[sel]
		c.mu.Unlock()
		clip.Targets = []string{"TARGETS", "TIMESTAMP"}
		if clip.Image != nil {
			clip.Targets = append(clip.Targets, clip.MIME)
		} else {
			clip.Targets = append(clip.Targets, textTargets...)
		}
		return clip, nil
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	out := desktop.Clipboard{}
	typ, raw, err := c.convert(ctx, sel, "TARGETS")
	if err != nil {
		return out, err
	}
	offered := map[string]bool{}
	if typ == xproto.AtomAtom {
		for i := 0; i+4 <= len(raw); i += 4 {
			n := c.atomName(xproto.Atom(binary.LittleEndian.Uint32(raw[i:])))
			out.Targets = append(out.Targets, n)
			offered[n] = true
		}
	}
	for _, mime := range []string{"image/png", "image/jpeg", "image/bmp", "image/gif"} {
		if offered[mime] {
			if _, data, err := c.convert(ctx, sel, mime); err == nil && len(data) > 0 {
				out.Image, out.MIME = data, mime
			}
			break
		}
	}
	for _, t := range []string{"UTF8_STRING", "text/plain;charset=utf-8", "STRING"} {
		if len(offered) > 0 && !offered[t] {
			continue
		}
		if _, data, err := c.convert(ctx, sel, t); err == nil {
			out.Text = string(data)
			break
		} else if ctx.Err() != nil {
			return out, err
		}
	}
	return out, nil
}

// convert asks the owner for target and reads the answer (INCR too).
func (c *clipboard) convert(ctx context.Context, sel xproto.Atom, target string) (xproto.Atom, []byte, error) {
	prop := c.atom("DECKHAND_SEL")
	// drain stale notifications of an earlier timed-out read
	for len(c.notify) > 0 {
		<-c.notify
	}
	xproto.ConvertSelection(c.conn, c.win, sel, c.atom(target), prop, 0)
	var ev xproto.SelectionNotifyEvent
	select {
	case ev = <-c.notify:
	case <-ctx.Done():
		return 0, nil, errClipTimeout
	}
	if ev.Property == 0 {
		return 0, nil, errNoTarget
	}
	for len(c.propNew) > 0 {
		<-c.propNew
	}
	r, err := xproto.GetProperty(c.conn, true, c.win, prop, xproto.GetPropertyTypeAny, 0, 1<<26).Reply()
	if err != nil {
		return 0, nil, err
	}
	if r.Type != c.atom("INCR") {
		return r.Type, r.Value, nil
	}
	// INCR: each new value of the property is the next chunk, until empty
	var buf []byte
	var typ xproto.Atom
	for {
		select {
		case <-c.propNew:
		case <-ctx.Done():
			return 0, nil, errClipTimeout
		case <-time.After(2 * time.Second):
			return 0, nil, errClipTimeout
		}
		r, err := xproto.GetProperty(c.conn, true, c.win, prop, xproto.GetPropertyTypeAny, 0, 1<<26).Reply()
		if err != nil {
			return 0, nil, err
		}
		if r.Type == 0 {
			continue // our own delete's notification raced
		}
		typ = r.Type
		if len(r.Value) == 0 {
			return typ, buf, nil
		}
		buf = append(buf, r.Value...)
	}
}

var (
	errClipTimeout = errors.New("the selection owner did not answer in time")
	errNoTarget    = errors.New("the selection owner cannot give that format")
)
