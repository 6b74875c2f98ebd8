package proxy

import (
	"context"
	"sync"
	"time"
)

// The catalog's answer for a running container is kept for a moment, so
// a request does not cost a store read (on PostgreSQL a round trip, which
// took the proxy to a third of the gateway's rate for small requests). It
// is kept only where the catalog signals its changes (Changes): a change
// in this process (a stop, a delete, a move) drops it before the next
// request; a change another replica makes is seen within foundTTL. A
// stale address cannot reach the wrong container: the request keeps its
// Host, and an agent refuses a Host that names another container.
const (
	foundTTL = time.Second
	// foundMax bounds the kept answers; past it the expired ones go,
	// and all of them when none has expired.
	foundMax = 4096
)

// foundCache keeps running containers by the Host's prefix and server.
type foundCache struct {
	changes Changes

	mu sync.Mutex
	m  map[foundKey]*foundEntry
}

type foundKey struct{ prefix, server string }

type foundEntry struct {
	c       Container
	until   time.Time
	changed <-chan struct{}
	release func()
}

// find answers the kept answer for (prefix, server), or asks cat and
// keeps a running one.
func (f *foundCache) find(ctx context.Context, cat Catalog, prefix, server string) (Container, error) {
	if f == nil {
		return cat.Find(ctx, prefix, server)
	}
	k := foundKey{prefix, server}
	now := time.Now()
	f.mu.Lock()
	if e := f.m[k]; e != nil {
		fresh := now.Before(e.until)
		if fresh {
			select {
			case <-e.changed:
				fresh = false
			default:
			}
		}
		if fresh {
			c := e.c
			f.mu.Unlock()
			return c, nil
		}
		delete(f.m, k)
		e.release()
	}
	f.mu.Unlock()
	c, err := cat.Find(ctx, prefix, server)
	if err != nil || c.Status != "running" || c.Addr == "" {
		return c, err
	}
	// A change between the read and the subscription is seen within
	// foundTTL, as another replica's is.
	changed, release := f.changes.Changed(c.ID)
	f.mu.Lock()
	defer f.mu.Unlock()
	if old := f.m[k]; old != nil {
		old.release()
	} else if len(f.m) >= foundMax {
		f.prune(now)
	}
	f.m[k] = &foundEntry{c: c, until: now.Add(foundTTL), changed: changed, release: release}
	return c, nil
}

// prune drops the expired answers, or all when none has expired.
func (f *foundCache) prune(now time.Time) {
	if f.drop(func(e *foundEntry) bool { return !now.Before(e.until) }) == 0 {
		f.drop(func(*foundEntry) bool { return true })
	}
}

// drop drops the kept answers match takes and answers how many; f.mu is
// held.
func (f *foundCache) drop(match func(*foundEntry) bool) int {
	n := 0
	for k, e := range f.m {
		if match(e) {
			delete(f.m, k)
			e.release()
			n++
		}
	}
	return n
}

// forget drops what is kept of container id.
func (f *foundCache) forget(id string) {
	f.dropLocked(func(e *foundEntry) bool { return e.c.ID == id })
}

// close releases every subscription.
func (f *foundCache) close() {
	f.dropLocked(func(*foundEntry) bool { return true })
}

// dropLocked is drop under f.mu; a nil cache keeps nothing.
func (f *foundCache) dropLocked(match func(*foundEntry) bool) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop(match)
}
