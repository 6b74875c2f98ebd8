package identity

import "sync"

// profiles finds the account a credential was resolved with, by the
// principal's session or token id, so Me answers from memory on the hot
// path: an entry counts only while the credential cache's version is the
// one it was loaded under (any write makes it stale, as for the cache).
type profiles struct {
	mu sync.RWMutex
	m  map[string]*credEntry
}

func (p *profiles) put(id string, e *credEntry) {
	p.mu.Lock()
	if p.m == nil || len(p.m) >= credCacheMax {
		p.m = map[string]*credEntry{}
	}
	p.m[id] = e
	p.mu.Unlock()
}

// cachedProfile is the profile the credential id was resolved with, for
// userID, or nil when unknown or stale.
func (s *Service) cachedProfile(id, userID string) *User {
	s.profiles.mu.RLock()
	e := s.profiles.m[id]
	s.profiles.mu.RUnlock()
	if e == nil || e.version != s.cache.version.Load() || e.p.UserID != userID {
		return nil
	}
	u := e.user
	return &u
}
