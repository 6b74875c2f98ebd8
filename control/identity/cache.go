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
// others. A writer also waits (at most echoWait) until its own message has
// come back through the database before it answers: by then the other
// replicas' listeners have been sent it too, so a client that turns from
// one replica to another right away finds the change there.
type credCache struct {
	version atomic.Uint64
	mu      sync.RWMutex
	m       map[string]*credEntry

	wmu       sync.Mutex
	waiters   map[string]chan struct{} // publish id → closed when it echoes
	listening bool
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
	ips       []string
	enabled   bool
	storedAt  *time.Time // last_used_at in the store
	storedIP  *string
	tokenHash string
}

const credCacheMax = 50_000

func newCredCache() *credCache {
	return &credCache{m: map[string]*credEntry{}, waiters: map[string]chan struct{}{}}
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

// await registers a publish id to wait for; nil before the cache listens.
func (c *credCache) await(id string) chan struct{} {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.listening {
		return nil
	}
	ch := make(chan struct{})
	c.waiters[id] = ch
	return ch
}

func (c *credCache) forget(id string) {
	c.wmu.Lock()
	delete(c.waiters, id)
	c.wmu.Unlock()
}

// invalidate drops every entry (by version) and releases the writer
// waiting for id, or every writer on a gap.
func (c *credCache) invalidate(n store.Notification) {
	c.version.Add(1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for id, ch := range c.waiters {
		if n.Gap || id == n.Payload {
			close(ch)
			delete(c.waiters, id)
		}
	}
}

// listen subscribes to cacheChannel (returning once the store listens)
// and invalidates on every message until ctx ends.
func (s *Service) listenCache(ctx context.Context) (done <-chan struct{}) {
	sub := s.db.Subscribe(ctx, cacheChannel)
	s.cache.wmu.Lock()
	s.cache.listening = true
	s.cache.wmu.Unlock()
	s.cache.version.Add(1) // anything cached before listening is suspect
	d := make(chan struct{})
	go func() {
		defer close(d)
		for n := range sub {
			s.cache.invalidate(n)
		}
		s.cache.wmu.Lock()
		s.cache.listening = false
		s.cache.wmu.Unlock()
		s.cache.invalidate(store.Notification{Gap: true})
	}()
	return d
}

func publishID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// update is the only way identity writes: it runs fn in a write
// transaction that tells every replica's credential cache when it
// commits, then invalidates this replica's cache and waits (bounded) for
// the message to come back.
func (s *Service) update(fn func(tx *store.Tx) error) error {
	id := publishID()
	echo := s.cache.await(id)
	err := s.db.Update(func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Publish(cacheChannel, id)
	})
	s.cache.version.Add(1)
	if echo != nil {
		if err == nil {
			select {
			case <-echo:
			case <-time.After(echoWait):
			}
		}
		s.cache.forget(id)
	}
	return err
}
