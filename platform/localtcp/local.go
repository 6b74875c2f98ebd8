package localtcp

import "net"

// Local reports whether a connection between local and remote stays on
// this host: the peer is a loopback address, or the connection's own
// address (both ends then share the loopback device).
func Local(local, remote net.Addr) bool {
	l, ok1 := local.(*net.TCPAddr)
	r, ok2 := remote.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return false
	}
	return r.IP.IsLoopback() || r.IP.Equal(l.IP)
}
