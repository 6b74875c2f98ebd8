package egress

import (
	"net/netip"
	"sync"
	"time"
)

// maxNames bounds the address → names memory.
const maxNames = 65536

// minTTL keeps a resolved address attributable for a while even with a
// zero TTL: clients connect right after they resolve.
const minTTL = 60 * time.Second

// names remembers which questions the agent's resolver answered with an
// address, until the answer's TTL (at least minTTL) runs out.
type names struct {
	mu sync.Mutex
	m  map[netip.Addr]map[string]time.Time
}

func newNames() *names { return &names{m: map[netip.Addr]map[string]time.Time{}} }

func (n *names) add(now time.Time, a netip.Addr, name string, ttl time.Duration) {
	if ttl < minTTL {
		ttl = minTTL
	}
	a = a.Unmap()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.m) >= maxNames {
		n.sweep(now)
	}
	if len(n.m) >= maxNames {
		return
	}
	set := n.m[a]
	if set == nil {
		set = map[string]time.Time{}
		n.m[a] = set
	}
	if exp := now.Add(ttl); exp.After(set[name]) {
		set[name] = exp
	}
}

// lookup returns the live names of a.
func (n *names) lookup(now time.Time, a netip.Addr) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for name, exp := range n.m[a.Unmap()] {
		if now.Before(exp) {
			out = append(out, name)
		}
	}
	return out
}

func (n *names) sweep(now time.Time) {
	for a, set := range n.m {
		for name, exp := range set {
			if !now.Before(exp) {
				delete(set, name)
			}
		}
		if len(set) == 0 {
			delete(n.m, a)
		}
	}
}
