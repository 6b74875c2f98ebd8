package reqpolicy

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"deckhand/platform/procnet"
)

// LocalTrust decides which connections from this machine count as the
// agent's own: those whose socket belongs to root, to the agent's own
// user or to a user of --trusted-uids (the owner is read from the kernel's
// socket table, platform/procnet, by the peer's address and port). Every
// other local user is no more trusted than an outside client: the gateway
// treats it as one, and a service's own port refuses it (the gateway,
// where credentials are judged, is its door).
//
// The verdict is one per connection: a socket's owner never changes, so a
// server that tracks its connections (ConnState) reads the table once
// for each connection it accepts, on the first request that needs it.
type LocalTrust struct {
	uids  map[uint32]bool
	own   uint32
	conns sync.Map // net.Conn → *peerVerdict, the connections a server of ours accepted
}

type peerVerdict struct {
	once sync.Once
	uid  uint32
	ok   bool // a process of this machine holds the peer's socket
}

// NewLocalTrust trusts root, the agent's own (effective) user and extra.
func NewLocalTrust(extra []uint32) *LocalTrust {
	own := uint32(os.Geteuid())
	t := &LocalTrust{uids: map[uint32]bool{0: true, own: true}, own: own}
	for _, u := range extra {
		t.uids[u] = true
	}
	return t
}

// ParseUIDs reads a --trusted-uids list: comma-separated decimal uids.
func ParseUIDs(list string) ([]uint32, error) {
	var out []uint32
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil || n == 1<<32-1 {
			return nil, fmt.Errorf("--trusted-uids: %q is not a uid (a decimal number, 0 to 4294967294)", f)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

// ConnState is a fasthttp.Server ConnState hook: it tracks the connections
// the server accepts, so each one's owner is read once.
func (t *LocalTrust) ConnState(c net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateNew:
		t.conns.Store(c, &peerVerdict{})
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		t.conns.Delete(c)
	}
}

// Tracked reports whether c is a connection a server with this ConnState
// hook accepted (not one made in memory by an in-process caller).
func (t *LocalTrust) Tracked(c net.Conn) bool {
	if c == nil {
		return false
	}
	_, ok := t.conns.Load(c)
	return ok
}

// peer is the uid owning the other end of c, and whether one was found.
func (t *LocalTrust) peer(c net.Conn) (uint32, bool) {
	if c == nil {
		return 0, false
	}
	if v, ok := t.conns.Load(c); ok {
		pv := v.(*peerVerdict)
		pv.once.Do(func() { pv.uid, pv.ok = t.lookup(c) })
		return pv.uid, pv.ok
	}
	return t.lookup(c)
}

// lookup finds the owner of c's peer socket: only a peer on this machine
// (loopback, or the address the connection arrived on) has one.
func (t *LocalTrust) lookup(c net.Conn) (uint32, bool) {
	la, lok := c.LocalAddr().(*net.TCPAddr)
	ra, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return 0, false
	}
	local, remote := la.AddrPort(), ra.AddrPort()
	l, r := local.Addr().Unmap(), remote.Addr().Unmap()
	if !r.IsLoopback() && r != l {
		return 0, false
	}
	uid, ok, err := procnet.Owner(remote, local)
	if err != nil || !ok {
		return 0, false
	}
	return uid, true
}

// Trusted reports whether c comes from a process of a trusted user on
// this machine.
func (t *LocalTrust) Trusted(c net.Conn) bool {
	uid, ok := t.peer(c)
	return ok && t.uids[uid]
}

// Own reports whether c comes from a process of the agent's own user (the
// gateway proxying to a service is one).
func (t *LocalTrust) Own(c net.Conn) bool {
	uid, ok := t.peer(c)
	return ok && uid == t.own
}
