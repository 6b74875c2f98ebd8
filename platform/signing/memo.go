package signing

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// memo remembers the signatures made in the current second with the current
// key, so a body answered again within that second is not signed again.
// Polling clients make this the common case: a dashboard's /me, the key
// set, notification and event lists answer the same bytes many times a
// second, and Ed25519 signing is over half the CPU of such a response.
//
// Ed25519 is deterministic, so a remembered signature is byte for byte the
// one signing would produce: the memo changes cost, never output. It holds
// only signatures (public by nature) and copies of bodies already sent, is
// bounded in entries and bytes, and is emptied when the second or the
// active key changes.
type memo struct {
	mu      sync.Mutex
	seed    maphash.Seed
	t       int64
	kid     string
	bytes   int
	entries map[uint64]memoEntry
}

type memoEntry struct {
	body []byte
	sig  []byte
}

const (
	memoMaxBody    = 16 << 10 // larger bodies are rarely repeated and cost more to compare
	memoMaxEntries = 4096
	memoMaxBytes   = 4 << 20
)

func newMemo() *memo {
	return &memo{seed: maphash.MakeSeed(), entries: make(map[uint64]memoEntry)}
}

// get returns the remembered signature of body at second t with key kid.
func (m *memo) get(t int64, kid string, body []byte) (sig []byte, h uint64, ok bool) {
	if len(body) > memoMaxBody {
		return nil, 0, false
	}
	h = maphash.Bytes(m.seed, body)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.t != t || m.kid != kid {
		return nil, h, false
	}
	e, ok := m.entries[h]
	if !ok || !bytes.Equal(e.body, body) {
		return nil, h, false
	}
	return e.sig, h, true
}

// put remembers sig as the signature of body (hash h) at second t with key kid.
func (m *memo) put(t int64, kid string, h uint64, body, sig []byte) {
	if len(body) > memoMaxBody {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t < m.t {
		return // a request that started in the previous second; keep the newer set
	}
	if m.t != t || m.kid != kid {
		m.t, m.kid, m.bytes = t, kid, 0
		clear(m.entries)
	}
	if len(m.entries) >= memoMaxEntries || m.bytes+len(body) > memoMaxBytes {
		return
	}
	if _, dup := m.entries[h]; dup {
		return // a racing signer got here first, or a hash collision: keep the first
	}
	m.entries[h] = memoEntry{body: bytes.Clone(body), sig: sig}
	m.bytes += len(body)
}
