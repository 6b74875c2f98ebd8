package reqpolicy

import (
	"net"
	"sync"
	"time"
)

// ownAddrs caches this machine's interface addresses: a forwarded Host
// that is an IP literal is checked against them (ownAddress), and they
// seldom change. A miss reads them again, at most once a second, so an
// address added since is found.
var ownAddrs struct {
	sync.Mutex
	set  map[string]bool
	read time.Time
}

// ownAddress reports whether ip is an address of one of this machine's
// interfaces (its network namespace's).
func ownAddress(ip net.IP) bool {
	key := ip.String()
	ownAddrs.Lock()
	defer ownAddrs.Unlock()
	if ownAddrs.set[key] {
		return true
	}
	if ownAddrs.set != nil && time.Since(ownAddrs.read) < time.Second {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	set := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			set[n.IP.String()] = true
		}
	}
	ownAddrs.set, ownAddrs.read = set, time.Now()
	return set[key]
}
