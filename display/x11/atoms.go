//go:build linux && cgo

package x11

import (
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// atomCache remembers atoms and their names, both ways, for one connection:
// each lookup it saves is a round trip to the server.
type atomCache struct {
	atomConn  *xgb.Conn
	atomMu    sync.Mutex
	atomIDs   map[string]xproto.Atom
	atomNames map[xproto.Atom]string
}

func newAtomCache(conn *xgb.Conn) *atomCache {
	return &atomCache{atomConn: conn, atomIDs: map[string]xproto.Atom{}, atomNames: map[xproto.Atom]string{}}
}

// atom interns name; 0 when the server does not answer.
func (t *atomCache) atom(name string) xproto.Atom {
	t.atomMu.Lock()
	a, ok := t.atomIDs[name]
	t.atomMu.Unlock()
	if ok {
		return a
	}
	r, err := xproto.InternAtom(t.atomConn, false, uint16(len(name)), name).Reply()
	if err != nil {
		return 0
	}
	t.remember(r.Atom, name)
	return r.Atom
}

// lookupName is a's name; false when the server cannot name it (each
// owner has its own fallback).
func (t *atomCache) lookupName(a xproto.Atom) (string, bool) {
	t.atomMu.Lock()
	n, ok := t.atomNames[a]
	t.atomMu.Unlock()
	if ok {
		return n, true
	}
	r, err := xproto.GetAtomName(t.atomConn, a).Reply()
	if err != nil {
		return "", false
	}
	t.remember(a, r.Name)
	return r.Name, true
}

func (t *atomCache) remember(a xproto.Atom, name string) {
	t.atomMu.Lock()
	t.atomIDs[name], t.atomNames[a] = a, name
	t.atomMu.Unlock()
}
