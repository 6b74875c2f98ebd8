// Package procnet reads the kernel's table of TCP sockets of this network
// namespace (/proc/net/tcp and /proc/net/tcp6 on Linux): the listening
// ports the tunnel discovers, and the owner (uid) of the local end of a
// connection, by which the agent tells its own and trusted users' local
// connections from other local users' (reqpolicy.LocalTrust). One socket's
// owner is asked of the same table through sock_diag (netlink), an exact
// lookup, with /proc as the fallback.
package procnet

import (
	"errors"
	"net/netip"
)

// Listening lists the sockets in state LISTEN.
func Listening() ([]Socket, error) {
	var out []Socket
	err := scan(func(s Socket) bool {
		if s.State == StateListen {
			out = append(out, s)
		}
		return false
	})
	return out, err
}

// Owner finds the uid that owns the socket whose own address is local and
// whose peer is remote: for a connection accepted on this machine, called
// with the peer's address as local and the accepting side's as remote, it
// is the user of the process that connected. ok is false when no process
// holds such a socket any more (it closed: a closed socket reads as uid 0
// and must never pass for root), or the connection is not from this
// network namespace.
func Owner(local, remote netip.AddrPort) (uid uint32, ok bool, err error) {
	local, remote = unmap(local), unmap(remote)
	if uid, ok, err := ownerDiag(local, remote); !errors.Is(err, errNoNetlink) {
		return uid, ok, err
	}
	return ownerScan(local, remote)
}

// ownerScan is Owner read from /proc/net/tcp{,6}.
func ownerScan(local, remote netip.AddrPort) (uid uint32, ok bool, err error) {
	err = scan(func(s Socket) bool {
		if s.Local != local || s.Remote != remote {
			return false
		}
		if s.Inode != 0 && s.State != StateTimeWait && s.State != StateListen {
			uid, ok = s.UID, true
		}
		return true
	})
	return uid, ok, err
}

func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}
