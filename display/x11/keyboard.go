//go:build linux && cgo

package x11

import (
	"time"

	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"deckhand/display/desktop"
)

const rebindGap = 60 * time.Millisecond

func (k *keyboard) init(d *Driver) error {
	setup := xproto.Setup(d.conn)
	k.min, k.max = setup.MinKeycode, setup.MaxKeycode
	k.pressed = map[desktop.Keysym]keyPos{}
	return k.load(d)
}

func (k *keyboard) load(d *Driver) error {
	r, err := xproto.GetKeyboardMapping(d.conn, k.min, byte(int(k.max)-int(k.min)+1)).Reply()
	if err != nil {
		return err
	}
	k.per = int(r.KeysymsPerKeycode)
	k.syms = r.Keysyms
	k.where = map[desktop.Keysym]keyPos{}
	k.spares = k.spares[:0]
	for kc := int(k.min); kc <= int(k.max); kc++ {
		row := k.syms[(kc-int(k.min))*k.per : (kc-int(k.min)+1)*k.per]
		empty := true
		for level, s := range row {
			if s != 0 {
				empty = false
			}
			if level > 1 || s == 0 {
				continue
			}
			sym := desktop.Keysym(s)
			if _, seen := k.where[sym]; !seen || (level == 0 && k.where[sym].shift) {
				k.where[sym] = keyPos{code: xproto.Keycode(kc), shift: level == 1}
			}
		}
		if empty {
			k.spares = append(k.spares, spare{code: xproto.Keycode(kc)})
		}
	}
	// keysyms of level 0 letters also answer for their upper case through
	// Shift when the map lists only the lower case
	if p, ok := k.where[0xffe1]; ok {
		k.shift = p.code
	}
	return nil
}

// symOf is the level-0 keysym of kc.
func (k *keyboard) symOf(kc xproto.Keycode) desktop.Keysym {
	k.mu.Lock()
	defer k.mu.Unlock()
	if kc < k.min || kc > k.max || k.per == 0 {
		return 0
	}
	return desktop.Keysym(k.syms[(int(kc)-int(k.min))*k.per])
}

// resolve finds or binds a keycode for sym. Callers hold k.mu.
func (k *keyboard) resolve(d *Driver, sym desktop.Keysym) (keyPos, error) {
	if p, ok := k.where[sym]; ok {
		return p, nil
	}
	for i := range k.spares {
		if k.spares[i].sym == sym {
			k.spares[i].used = time.Now()
			return keyPos{code: k.spares[i].code}, nil
		}
	}
	if len(k.spares) == 0 {
		return keyPos{}, d.xerr("type a character", errNoSpare)
	}
	lru := 0
	for i := range k.spares {
		if k.spares[i].used.Before(k.spares[lru].used) {
			lru = i
		}
	}
	sp := &k.spares[lru]
	if wait := rebindGap - time.Since(sp.used); sp.sym != 0 && wait > 0 {
		time.Sleep(wait)
	}
	per := max(k.per, 1)
	row := make([]xproto.Keysym, per)
	for i := range row {
		row[i] = xproto.Keysym(sym)
	}
	if err := xproto.ChangeKeyboardMappingChecked(d.conn, 1, sp.code, byte(per), row).Check(); err != nil {
		return keyPos{}, d.xerr("bind a key", err)
	}
	copy(k.syms[(int(sp.code)-int(k.min))*k.per:], row)
	sp.sym, sp.used = sym, time.Now()
	return keyPos{code: sp.code}, nil
}

// restore unbinds the spares this driver bound.
func (k *keyboard) restore(d *Driver) {
	k.mu.Lock()
	defer k.mu.Unlock()
	per := max(k.per, 1)
	for i := range k.spares {
		if k.spares[i].sym == 0 {
			continue
		}
		_ = xproto.ChangeKeyboardMappingChecked(d.conn, 1, k.spares[i].code, byte(per), make([]xproto.Keysym, per)).Check()
		k.spares[i].sym = 0
	}
}

func (d *Driver) fakeKey(code xproto.Keycode, down bool) error {
	return d.fakePress(xproto.KeyPress, xproto.KeyRelease, byte(code), down)
}

// Key presses or releases the key producing sym; a symbol on the shifted
// level is pressed with Shift (released with it too).
func (d *Driver) Key(sym desktop.Keysym, down bool) error {
	k := &d.kb
	k.mu.Lock()
	defer k.mu.Unlock()
	if !down {
		if p, ok := k.pressed[sym]; ok {
			delete(k.pressed, sym)
			if err := d.fakeKey(p.code, false); err != nil {
				return err
			}
			if p.shift {
				return d.fakeKey(k.shift, false)
			}
			return nil
		}
	}
	p, err := k.resolve(d, sym)
	if err != nil {
		return err
	}
	if !down {
		return d.fakeKey(p.code, false)
	}
	if p.shift && k.shift != 0 {
		if err := d.fakeKey(k.shift, true); err != nil {
			return err
		}
	} else {
		p.shift = false
	}
	k.pressed[sym] = p
	return d.fakeKey(p.code, true)
}

// TypeRune taps what produces r.
func (d *Driver) TypeRune(r rune) error {
	sym := desktop.RuneKeysym(r)
	if err := d.Key(sym, true); err != nil {
		return err
	}
	return d.Key(sym, false)
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

type xError string

func (e xError) Error() string { return string(e) }

const errNoSpare = xError("the keyboard map has no spare keycode to bind the character to")
