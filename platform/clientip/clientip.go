// Package clientip owns the one rule, shared by the agent's gateway, the
// container services and the control plane, for which address a request
// came from when a trusted proxy stands in front (--trust-proxy-headers).
//
// The proxy appends the address it saw to X-Forwarded-For, as a hop at the
// end of the last header line or as a header line of its own. Everything to
// the left of that hop was written by the client, so it is never used: when
// the right-most hop is not a bare IP address the proxy's word is unusable
// and the client is the socket peer (the proxy itself).
package clientip

import (
	"net"
	"net/netip"
	"strings"
)

// Header is the header a trusted proxy names the client in.
const Header = "X-Forwarded-For"

// Resolve is the client behind a request whose socket peer is peer and
// whose X-Forwarded-For header lines are lines, in the order they came.
//
// The lines are one list (RFC 9110 5.3: repeated field lines join with
// commas in order). Its right-most element counts, and only when the peer
// is a loopback, private or link-local address (a proxy next to us) and the
// element, without surrounding spaces or tabs, is a bare IPv4 or IPv6
// address: no port, no brackets, no zone, not "unknown", not empty (a
// trailing comma or an empty last line leaves an empty right-most element).
// In every other case the peer is the client. IPv4-mapped IPv6 addresses
// come back as IPv4.
func Resolve[S ~string | ~[]byte](peer netip.Addr, lines []S) netip.Addr {
	peer = peer.Unmap()
	if !Trusted(peer) || len(lines) == 0 {
		return peer
	}
	last := string(lines[len(lines)-1])
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	ip, err := netip.ParseAddr(strings.Trim(last, " \t"))
	if err != nil || ip.Zone() != "" {
		return peer
	}
	return ip.Unmap()
}

// Trusted reports whether a socket peer may name the client: a loopback,
// private or link-local address, where the platform proxy or the gateway
// runs. A public peer speaks only for itself.
func Trusted(peer netip.Addr) bool {
	return peer.IsLoopback() || peer.IsPrivate() || peer.IsLinkLocalUnicast()
}

// FromIP converts a net.IP peer (fasthttp's RemoteIP, net.ParseIP) to the
// netip.Addr Resolve takes; nil or malformed gives the zero Addr, which is
// never trusted.
func FromIP(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}
