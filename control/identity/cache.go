package identity

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"deckhand/platform/store"
)

// The credential cache makes Authenticate cheap on the hot path: a
// credential seen before skips JWT verification and the store. It is
// correct without per-key invalidation because every write transaction
// bumps one version after it commits, and an entry is used only while the
// version it was loaded under is current. A reader takes the version
// before it opens its read transaction, so anything it read is at least
// that fresh. One process owns the store, so every write passes here.
type credCache struct {
	version atomic.Uint64
	mu      sync.RWMutex
	m       map[string]*credEntry
}

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

func newCredCache() *credCache { return &credCache{m: map[string]*credEntry{}} }

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

// update is the only way identity writes: it runs fn in a write
// transaction and then invalidates the credential cache.
func (s *Service) update(fn func(tx *store.Tx) error) error {
	err := s.db.Update(fn)
	s.cache.version.Add(1)
	return err
}
