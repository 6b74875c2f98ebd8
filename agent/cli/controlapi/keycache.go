package controlapi

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"time"

	"deckhand/agent/cli/privfile"
	"deckhand/platform/signing"
)

// cachedSet is one control plane's key set as last fetched.
type cachedSet struct {
	FetchedAt time.Time            `json:"fetched_at"`
	Set       signing.PublicKeySet `json:"set"`
}

// keyCache keeps the key sets of the control planes this client talks to
// in one file, by control URL, so every command does not fetch them again
// (docs/spec/interface.md: cache at least 24 hours).
type keyCache struct {
	path string
	url  string
	now  func() time.Time
	mu   sync.Mutex
}

// source is the verifier's key source: the first call of a process answers
// the cached set when it is younger than signing.DefaultCacheTTL; every
// other call (the verifier asks again only for an unknown kid or a stale
// set) fetches from the control plane and caches what it got. A fetched
// set must carry a valid signature by one of its own keys (HTTPKeySource).
func (k *keyCache) source(fetch signing.KeySource) signing.KeySource {
	first := true
	return func(ctx context.Context) (signing.PublicKeySet, error) {
		k.mu.Lock()
		useCache := first
		first = false
		k.mu.Unlock()
		if useCache {
			if c, ok := k.load(); ok && k.now().Sub(c.FetchedAt) < signing.DefaultCacheTTL && len(c.Set.Keys) > 0 {
				return c.Set, nil
			}
		}
		set, err := fetch(ctx)
		if err != nil {
			return set, err
		}
		k.store(set)
		return set, nil
	}
}

func (k *keyCache) load() (cachedSet, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	all := map[string]cachedSet{}
	if err := privfile.Read(k.path, &all); err != nil {
		return cachedSet{}, false
	}
	c, ok := all[k.url]
	return c, ok
}

// store records set; a cache that cannot be written costs a fetch next
// time, nothing more.
func (k *keyCache) store(set signing.PublicKeySet) {
	k.mu.Lock()
	defer k.mu.Unlock()
	all := map[string]cachedSet{}
	if err := privfile.Read(k.path, &all); err != nil && !errors.Is(err, fs.ErrNotExist) {
		all = map[string]cachedSet{}
	}
	all[k.url] = cachedSet{FetchedAt: k.now().UTC(), Set: set}
	_ = privfile.Write(k.path, all)
}
