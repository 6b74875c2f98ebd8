package platformtest

import (
	"sync"

	"deckhand/platform/contract"
)

// Seams is a contract.Journal and contract.Notifier that keeps what it is
// given, for tests that check what a service or the supervisor reported.
type Seams struct {
	mu      sync.Mutex
	entries []contract.JournalEntry
	events  []contract.Event
}

// Record keeps a journal entry.
func (s *Seams) Record(e contract.JournalEntry) {
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.mu.Unlock()
}

// Notify keeps an event.
func (s *Seams) Notify(e contract.Event) { s.mu.Lock(); s.events = append(s.events, e); s.mu.Unlock() }

// Entries are the journal entries so far.
func (s *Seams) Entries() []contract.JournalEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]contract.JournalEntry(nil), s.entries...)
}

// Events are the events so far.
func (s *Seams) Events() []contract.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]contract.Event(nil), s.events...)
}
