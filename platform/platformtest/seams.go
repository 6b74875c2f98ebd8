package platformtest

import (
	"sync"

	"deckhand/platform"
)

// Seams is a platform.Journal and platform.Notifier that keeps what it is
// given, for tests that check what a service or the supervisor reported.
type Seams struct {
	mu      sync.Mutex
	entries []platform.JournalEntry
	events  []platform.Event
}

// Record keeps a journal entry.
func (s *Seams) Record(e platform.JournalEntry) {
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.mu.Unlock()
}

// Notify keeps an event.
func (s *Seams) Notify(e platform.Event) { s.mu.Lock(); s.events = append(s.events, e); s.mu.Unlock() }

// Entries are the journal entries so far.
func (s *Seams) Entries() []platform.JournalEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]platform.JournalEntry(nil), s.entries...)
}

// Events are the events so far.
func (s *Seams) Events() []platform.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]platform.Event(nil), s.events...)
}
