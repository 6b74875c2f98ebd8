package exec

import (
	"maps"
	"slices"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/timeloop"
)

// The scheduler runs on platform/timeloop's loop. Due times missed while
// the service was down are not made up (a systemd timer without
// Persistent=); several due times missed in one sleep run once.

// entry is one loaded schedule and its run state.
type entry struct {
	def    *Schedule
	next   time.Time
	active int
	queue  []Run
}

func (s *Service) loop() {
	defer close(s.done)
	timeloop.Run(s.ctx, s.deps.Clock, s.wake, func(now time.Time) time.Time {
		s.tick(now)
		s.mu.Lock()
		defer s.mu.Unlock()
		var next time.Time
		for _, e := range s.entries {
			if !e.next.IsZero() && (next.IsZero() || e.next.Before(next)) {
				next = e.next
			}
		}
		return next
	})
}

// tick fires every schedule due at now.
func (s *Service) tick(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range s.names() {
		e := s.entries[name]
		if e.next.IsZero() || now.Before(e.next) {
			continue
		}
		at := e.next
		e.next = e.def.sched.Next(now)
		if _, err := s.fire(e, "schedule", &at); err != nil {
			s.log.Error("exec: start a run", "schedule", name, "err", err)
		}
	}
}

// names are the schedules in name order; the caller holds s.mu.
func (s *Service) names() []string {
	return slices.Sorted(maps.Keys(s.entries))
}

// fire starts a run of e now, or records it skipped or queued by the
// overlap policy. The caller holds s.mu.
func (s *Service) fire(e *entry, trigger string, at *time.Time) (Run, error) {
	def := e.def
	r := Run{Schedule: def.Name, Trigger: trigger, ScheduledAt: at, StartedAt: s.deps.Clock.Now(), Status: StatusRunning}
	if s.ctx.Err() != nil {
		return Run{}, fault.Errorf(fault.CodeUnavailable, "the exec service is stopping")
	}
	if e.active > 0 {
		switch {
		case def.Overlap == OverlapSkip:
			r.Status, r.Error = StatusSkipped, "the previous run is still going (overlap skip)"
		case def.Overlap == OverlapQueue && len(e.queue) >= maxQueue:
			r.Status, r.Error = StatusSkipped, "the queue is full (overlap queue keeps at most 10 waiting)"
		case def.Overlap == OverlapQueue:
			r.Status = StatusQueued
		}
	}
	r, err := s.newRun(r)
	if err != nil {
		return Run{}, err
	}
	switch r.Status {
	case StatusSkipped:
		s.journalRun(def, r)
	case StatusQueued:
		e.queue = append(e.queue, r)
	default:
		s.launch(e, def, r)
	}
	return r, nil
}

// launch runs r in the background; the caller holds s.mu.
func (s *Service) launch(e *entry, def *Schedule, r Run) {
	e.active++
	s.wg.Go(func() {
		r = s.execute(def, r)
		// The record says the run ended only once the schedule no longer
		// counts it, so a trigger after reading it is never skipped.
		s.mu.Lock()
		e.active--
		s.lastEnded = s.deps.Clock.Now()
		s.saveRun(r)
		if len(e.queue) > 0 && s.ctx.Err() == nil {
			next := e.queue[0]
			e.queue = e.queue[1:]
			next.Status, next.StartedAt = StatusRunning, s.deps.Clock.Now()
			s.saveRun(next)
			s.launch(e, e.def, next)
		}
		s.mu.Unlock()
		s.report(def, r)
	})
}

// install replaces the loaded schedules with defs: unchanged schedules
// keep their next time and runs; changed ones get the new definition and
// a next time from now; removed ones drop their queue (runs in progress
// finish). The caller holds s.mu.
func (s *Service) install(defs []*Schedule) (added, changed, removed []string) {
	now := s.deps.Clock.Now()
	keep := map[string]bool{}
	for _, d := range defs {
		keep[d.Name] = true
		e, ok := s.entries[d.Name]
		switch {
		case !ok:
			s.entries[d.Name] = &entry{def: d, next: d.sched.Next(now)}
			added = append(added, d.Name)
		case !e.def.same(d):
			e.def, e.next = d, d.sched.Next(now)
			changed = append(changed, d.Name)
		}
	}
	for _, name := range s.names() {
		if keep[name] {
			continue
		}
		for _, q := range s.entries[name].queue {
			q.Status, q.Error = StatusSkipped, "the schedule was removed by a reload"
			s.saveRun(q)
		}
		delete(s.entries, name)
		removed = append(removed, name)
	}
	return added, changed, removed
}
