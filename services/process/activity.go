package process

import "deckhand/platform/contract"

// Activity counts the processes running or starting (a running process
// keeps the container from idling) and when the last one ended.
func (s *Service) Activity() contract.Activity {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := contract.Activity{Last: s.lastEnded}
	if s.running > 0 {
		a.Busy = map[string]int{"process": s.running}
	}
	return a
}
