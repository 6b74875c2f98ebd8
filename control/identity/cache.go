package identity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"deckhand/platform/store"
)

// The credential cache makes Authenticate cheap on the hot path: a
// credential seen before skips JWT verification and the store. It is
// correct without per-key invalidation because every write transaction
// bumps one version, and an entry is used only while the version it was
// loaded under is current. A reader takes the version before it opens its
// read transaction, so anything it read is at least that fresh.
//
// Replicas on one database each keep their own cache: every identity write
// publishes on cacheChannel when it commits (store notifications, LISTEN/
// NOTIFY on PostgreSQL), and every replica bumps its version on each
// message, and on a gap (a lost listener connection, a slow subscriber),
// so a logout, a disabled token or a ban on one replica is refused by the
// others. A writer also waits (at most echoWait) until every live replica
// has acknowledged dropping its cache before it answers, so a client that
// turns from one replica to another right away finds the change there.
type credCache struct {
	version atomic.Uint64
	mu      sync.RWMutex
	m       map[string]*credEntry

	self      string // this replica's id on cacheChannel
	wmu       sync.Mutex
	waiters   map[string]*waiter   // write id → who has yet to acknowledge
	peers     map[string]time.Time // other replicas → last heard from
	listening bool
	heard     atomic.Bool // this replica's own first hello came back
}

// cacheChannel carries "some identity record changed" between replicas.
const cacheChannel = "identity_credentials"

// echoWait bounds how long a write waits for its own notification.
const echoWait = time.Second

type credEntry struct {
	version uint64
	p       Principal
	user    User
	// Validity of the credential itself, checked on every hit.
	expires time.Time // zero: none
	// svc_ tokens only.
	ips     []string
	enabled bool
	stored  atomic.Pointer[usageMark] // last_used_* in the store; nil: none
}

// usageMark is an auth token's last_used_* as last written to the store.
type usageMark struct {
	at time.Time
	ip string
}

const credCacheMax = 50_000

func newCredCache() *credCache {
	return &credCache{m: map[string]*credEntry{}, self: publishID(),
		waiters: map[string]*waiter{}, peers: map[string]time.Time{}}
}

func (c *credCache) get(key string) *credEntry {
	c.mu.RLock()
	e := c.m[key]
	c.mu.RUnlock()
	if e == nil || e.version != c.version.Load() {
		return nil
	}
	return e
}

// put stores e under a copy of key: request headers are views into
// fasthttp's reused buffers and must not be kept.
func (c *credCache) put(key string, e *credEntry) {
	key = strings.Clone(key)
	c.mu.Lock()
	if len(c.m) >= credCacheMax {
		c.m = map[string]*credEntry{}
	}
	c.m[key] = e
	c.mu.Unlock()
}

// The messages on cacheChannel:
//
//	w <origin> <id>   a write committed: drop the cache, then acknowledge
//	a <id> <replica>  replica has dropped its cache for write id
//	h <replica>       replica is alive (at start and every helloEvery)
//
// A writer waits until every replica heard from within peerTTL (itself
// included, by its own echo) has acknowledged, at most echoWait: the next
// request, to whichever replica, finds the change.
const (
	helloEvery = time.Second
	peerTTL    = 3 * helloEvery
)

type waiter struct {
	need map[string]bool // replicas yet to acknowledge
	done chan struct{}
}

// await registers a write id to wait for; nil before the cache listens.
func (c *credCache) await(id string) chan struct{} {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.listening {
		return nil
	}
	w := &waiter{need: map[string]bool{c.self: true}, done: make(chan struct{})}
	now := time.Now()
	for p, seen := range c.peers {
		if now.Sub(seen) < peerTTL {
			w.need[p] = true
		}
	}
	c.waiters[id] = w
	return w.done
}

func (c *credCache) forget(id string) {
	c.wmu.Lock()
	delete(c.waiters, id)
	c.wmu.Unlock()
}

// acked notes that replica has dropped its cache for write id.
func (c *credCache) acked(id, replica string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if replica != c.self {
		c.peers[replica] = time.Now()
	}
	if w := c.waiters[id]; w != nil {
		delete(w.need, replica)
		if len(w.need) == 0 {
			close(w.done)
			delete(c.waiters, id)
		}
	}
}

// gap drops every entry and releases every writer: messages may be lost.
func (c *credCache) gap() {
	c.version.Add(1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for id, w := range c.waiters {
		close(w.done)
		delete(c.waiters, id)
	}
}

// handle acts on one message; it returns the write id to acknowledge.
func (c *credCache) handle(n store.Notification) (ack string) {
	if n.Gap {
		c.gap()
		return ""
	}
	f := strings.Fields(n.Payload)
	switch {
	case len(f) == 3 && f[0] == "w":
		c.version.Add(1)
		if f[1] == c.self {
			c.acked(f[2], c.self)
			return ""
		}
		return f[2]
	case len(f) == 3 && f[0] == "a":
		c.acked(f[1], f[2])
	case len(f) == 2 && f[0] == "h":
		// A hello changes no record. The echo of this replica's first one
		// drops what it cached before the others could have heard of it
		// (their writes until then did not wait for it); later echoes,
		// every helloEvery, drop nothing (they used to drop everything).
		if f[1] != c.self {
			c.wmu.Lock()
			c.peers[f[1]] = time.Now()
			c.wmu.Unlock()
		} else if c.heard.CompareAndSwap(false, true) {
			c.version.Add(1)
		}
	default: // unknown: be safe
		c.version.Add(1)
	}
	return ""
}

// listenCache subscribes to cacheChannel (returning once the store
// listens), announces this replica, and then drops the cache on every
// write anywhere and acknowledges it, until ctx ends.
func (s *Service) listenCache(ctx context.Context) (done <-chan struct{}) {
	c := s.cache
	sub := s.db.Subscribe(ctx, cacheChannel)
	c.wmu.Lock()
	c.listening = true
	c.wmu.Unlock()
	c.version.Add(1) // anything cached before listening is suspect
	_ = s.db.Publish(ctx, cacheChannel, "h "+c.self)
	acks := make(chan string, 256)
	d := make(chan struct{})
	go func() { // acknowledgements and hellos, off the listening loop
		t := time.NewTicker(helloEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case id := <-acks:
				_ = s.db.Publish(ctx, cacheChannel, "a "+id+" "+c.self)
			case <-t.C:
				_ = s.db.Publish(ctx, cacheChannel, "h "+c.self)
			}
		}
	}()
	go func() {
		defer close(d)
		for n := range sub {
			if id := c.handle(n); id != "" {
				select {
				case acks <- id:
				default: // the writer stops waiting after echoWait
				}
			}
		}
		c.wmu.Lock()
		c.listening = false
		c.wmu.Unlock()
		c.gap()
	}()
	return d
}

func publishID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// update is the way identity writes credentials and accounts: it runs fn in a write
// transaction that tells every replica's credential cache when it
// commits, then invalidates this replica's cache and waits (bounded) until
// the other replicas have dropped theirs.
func (s *Service) update(fn func(tx *store.Tx) error) error {
	id := publishID()
	done := s.cache.await(id)
	err := s.db.Update(func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Publish(cacheChannel, "w "+s.cache.self+" "+id)
	})
	s.cache.version.Add(1)
	if done != nil {
		if err == nil {
			select {
			case <-done:
			case <-time.After(echoWait):
			}
		}
		s.cache.forget(id)
	}
	return err
}
