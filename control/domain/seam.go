package domain

import "sync"

// seam is one thing a domain provides to the others: set once when the
// providing domain is built, read by any at request time.
type seam[T any] struct {
	mu  sync.RWMutex
	v   T
	set bool
}

// provide sets the seam; a second call panics, naming what.
func (s *seam[T]) provide(v T, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set {
		panic("domain: " + what + " provided twice")
	}
	s.v, s.set = v, true
}

// get is what was provided, the zero value before that.
func (s *seam[T]) get() T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.v
}
