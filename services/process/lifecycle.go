package process

import (
	"slices"
	"time"

	"deckhand/services/process/outlog"
)

// failStart records a process that could not be executed.
func (s *Service) failStart(p *process, err error) {
	defer s.wg.Done()
	p.finish(EndFailedToStart, 0, "", err.Error(), s.deps.Clock.Now())
	s.complete(p)
}

// complete is the end of p's output, once its record is final: it saves
// the record with the output's counts and frees its slot.
func (s *Service) complete(p *process) {
	p.log.Close()
	p.closePTY()
	p.save(p.snapshot())
	s.ended(p) // before done: whoever waits on it sees the bounds applied
	close(p.done)
}

// ended frees p's running slot and applies --process-max-finished.
func (s *Service) ended(p *process) {
	s.mu.Lock()
	s.running--
	s.lastEnded = s.deps.Clock.Now()
	s.queueFinished(p)
	victims := s.overflow()
	s.mu.Unlock()
	for _, v := range victims {
		s.remove(v)
	}
	if s.set.Retention == 0 {
		s.remove(p)
	}
}

// queueFinished counts p, registered and finished, among the finished
// processes; the caller holds s.mu.
func (s *Service) queueFinished(p *process) {
	if s.procs[p.id] != p || p.queued {
		return
	}
	p.queued = true
	s.finished = append(s.finished, p)
	s.nFinished++
	// Ends are queued as they are reported, nearly always in the order
	// they happened; one reported late moves back to its place, so the
	// oldest still goes first.
	end := endOf(p)
	for i := len(s.finished) - 1; i > 0; i-- {
		prev := s.finished[i-1]
		if !endOf(prev).After(end) {
			break
		}
		s.finished[i-1], s.finished[i] = p, prev
	}
}

// overflow unregisters the oldest finished processes beyond
// --process-max-finished; the caller holds s.mu and removes them.
func (s *Service) overflow() []*process {
	var victims []*process
	for s.nFinished > s.set.MaxFinished && len(s.finished) > 0 {
		v := s.finished[0]
		s.finished[0] = nil
		s.finished = s.finished[1:]
		if v.queued {
			s.unregister(v)
			victims = append(victims, v)
		}
	}
	// Entries removed by retention or DELETE stay until reached; compact
	// when they outnumber the live ones, so the queue stays bounded.
	if stale := len(s.finished) - s.nFinished; stale > 64 && stale > s.nFinished {
		s.finished = slices.DeleteFunc(s.finished, func(p *process) bool { return !p.queued })
	}
	return victims
}

func endOf(p *process) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rec.EndedAt != nil {
		return *p.rec.EndedAt
	}
	return p.rec.StartedAt
}

// unregister forgets p; the caller holds s.mu.
func (s *Service) unregister(p *process) {
	if s.procs[p.id] == p {
		delete(s.procs, p.id)
	}
	if p.queued {
		p.queued = false
		s.nFinished--
	}
	if t := p.spec.ClientToken; t != "" && s.tokens[t] == p {
		delete(s.tokens, t)
	}
}

// remove deletes a finished process's record and output.
func (s *Service) remove(p *process) {
	s.mu.Lock()
	s.unregister(p)
	s.mu.Unlock()
	p.log.Remove()
	s.store.del(p.id)
}

// janitor removes finished processes once their retention has passed.
func (s *Service) janitor() {
	every := min(max(s.set.Retention/4, 10*time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		cut := s.deps.Clock.Now().Add(-s.set.Retention)
		s.mu.Lock()
		var old []*process
		for _, p := range s.procs {
			select {
			case <-p.done:
				if endOf(p).Before(cut) {
					old = append(old, p)
				}
			default:
			}
		}
		s.mu.Unlock()
		for _, p := range old {
			s.remove(p)
		}
	}
}

// restore loads the records. One that says running belonged to a service
// that died without stopping it: its main process died with the agent
// (Pdeathsig), what is left of it is killed now, and the record says
// agent_restarted.
func (s *Service) restore() error {
	recs, err := s.store.load()
	if err != nil {
		return err
	}
	now := s.deps.Clock.Now()
	lost := map[string]bool{}
	for _, r := range recs {
		if r.State == StateRunning {
			lost[r.ID] = true
		}
	}
	if len(lost) > 0 {
		if n := killLeftovers(lost); n > 0 {
			s.log.Warn("process: killed what was left of processes the previous run started", "processes", n)
		}
	}
	var back []*process
	for _, r := range recs {
		rec := r.Process
		if lost[rec.ID] {
			rec.State, rec.EndReason, rec.EndedAt = StateKilled, EndAgentRestarted, new(now)
			rec.Error = "the agent stopped while the process ran; it was killed with the agent"
			rec.DurationMS = ms(now.Sub(rec.StartedAt))
			rec.StdinOpen = false
			s.store.put(stored{Process: rec, SpecHash: r.SpecHash})
			s.journal("warn", "process "+rec.ID+" killed: the agent stopped while it ran",
				map[string]any{"id": rec.ID, "state": rec.State, "end_reason": rec.EndReason})
		}
		rec.OutputKeptFrom, rec.OutputComplete = rec.OutputBytes, true
		p := &process{svc: s, id: rec.ID, hash: r.SpecHash, rec: rec, log: outlog.Restored(s.budget, rec.StdoutBytes, rec.StderrBytes, rec.OutputBytes),
			kill: make(chan time.Duration, 1), started: make(chan struct{}), ended: make(chan struct{}), done: make(chan struct{})}
		p.spec.ClientToken, p.spec.Tag = rec.ClientToken, rec.Tag
		p.exited = true
		close(p.started)
		close(p.ended)
		close(p.done)
		s.procs[p.id] = p
		if rec.ClientToken != "" {
			s.tokens[rec.ClientToken] = p
		}
		back = append(back, p)
	}
	slices.SortStableFunc(back, func(a, b *process) int { return endOf(a).Compare(endOf(b)) })
	for _, p := range back {
		s.queueFinished(p)
	}
	return nil
}
