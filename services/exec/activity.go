package exec

import "deckhand/platform/contract"

// Activity counts the scheduled runs in progress (a run keeps the
// container from idling, as a process does) and when the last one ended.
func (s *Service) Activity() contract.Activity {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := contract.Activity{Last: s.lastEnded}
	n := 0
	for _, e := range s.entries {
		n += e.active
	}
	if n > 0 {
		a.Busy = map[string]int{"exec_run": n}
	}
	return a
}
