package cron

import "deckhand/platform/contract"

// Activity counts the crontab runs in progress when the service runs them
// itself (--cron-runner): a run keeps the container from idling, as a
// process does.
func (s *Service) Activity() contract.Activity {
	if s.run == nil {
		return contract.Activity{}
	}
	r := s.run
	r.mu.Lock()
	defer r.mu.Unlock()
	a := contract.Activity{Last: r.lastEnded}
	n := 0
	for _, c := range r.active {
		n += c
	}
	if n > 0 {
		a.Busy = map[string]int{"cron_run": n}
	}
	return a
}
