package daemon

import (
	"maps"
	"slices"
	"time"

	"deckhand/platform/contract"
)

// Activity counts the daemon's jobs in progress: programs with restart
// "never", which run to an end, keep the container from idling while they
// run, as a process does. Programs restarted by their policy are servers
// that run for good; counting them would keep a container awake forever,
// so what they serve counts instead (requests and connections through the
// gateway).
func (s *Service) Activity() contract.Activity {
	s.mu.Lock()
	progs := slices.Collect(maps.Values(s.programs))
	s.mu.Unlock()
	var a contract.Activity
	n := 0
	for _, p := range progs {
		busy, ended := p.jobActivity()
		if busy {
			n++
		}
		if ended.After(a.Last) {
			a.Last = ended
		}
	}
	if n > 0 {
		a.Busy = map[string]int{"daemon_job": n}
	}
	return a
}

// jobActivity says whether p is a job (restart never) whose run goes on,
// and when its last run ended.
func (p *program) jobActivity() (busy bool, ended time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.def == nil || p.def.Restart != RestartNever {
		return false, time.Time{}
	}
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return true, p.ended
		}
	}
	return false, p.ended
}
