package projects

import (
	"context"
	"time"

	"deckhand/control/runtime"
	"deckhand/platform/store"
)

// The reconciler keeps each record true to the engine: at start, on every
// engine event of this installation (the driver's Watch filters by the
// installation label, so another control plane's containers never come
// here), after the event stream ends (an engine restart) and every
// ReconcileEvery. It moves the record to what the engine says, with the
// status's event; it acts on the engine only to finish what the record
// asks (a create or a delete under way) and to remove engine containers
// of this installation that no record names.

// runReconciler reconciles until the lifecycle's context ends.
func (s *Service) runReconciler() {
	ctx := s.lc.ctx
	drv := s.lc.rt.Driver
	backoff := time.Second
	for ctx.Err() == nil {
		s.reconcileAll(ctx)
		events, err := drv.Watch(ctx)
		if err != nil {
			s.log.Warn("container engine: watching events failed; listing again", "err", err, "retry_in", backoff)
			if !sleepCtx(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, s.lc.rt.ReconcileEvery)
			continue
		}
		backoff = time.Second
		tick := time.NewTicker(s.lc.rt.ReconcileEvery)
	watch:
		for {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case ev, ok := <-events:
				if !ok {
					break watch
				}
				s.reconcileOne(ctx, ev.ContainerID, nil)
			case <-tick.C:
				s.reconcileAll(ctx)
			}
		}
		tick.Stop()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// reconcileAll reconciles every record and every engine container of this
// installation.
func (s *Service) reconcileAll(ctx context.Context) {
	engine, err := s.lc.rt.Driver.List(ctx)
	if err != nil {
		s.log.Warn("container engine: listing containers failed", "err", err)
		return
	}
	if len(engine) > 0 {
		// Agents already running reach the control plane at the URL
		// they were given: open its listener again.
		if _, err := s.agentURL(ctx); err != nil {
			s.log.Warn("container engine: the agents' control-plane URL", "err", err)
		}
	}
	var ids []string
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		return tx.ForEach(bucketContainers, func(key string, _ []byte) error {
			ids = append(ids, key)
			return nil
		})
	})
	if err != nil {
		s.log.Warn("container reconcile: reading the records failed", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
		st, ok := engine[id]
		if !ok {
			st = runtime.Status{State: runtime.StateMissing}
		}
		s.reconcileOne(ctx, id, &st)
	}
	for id := range engine {
		if !seen[id] {
			s.reconcileOne(ctx, id, nil)
		}
	}
}

// reconcileOne moves container id's record to the engine's state (known
// when st is given, else inspected).
func (s *Service) reconcileOne(ctx context.Context, id string, st *runtime.Status) {
	if id == "" || ctx.Err() != nil || s.isInflight(id) {
		return
	}
	drv := s.lc.rt.Driver
	unlock := s.lc.lock(id)
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	c, err := s.loadContainer(ctx, id)
	if err != nil {
		s.log.Warn("container reconcile: reading the record failed", "container", id, "err", err)
		return
	}
	if c != nil && c.ImageName == "" {
		return // registered by an admin for an agent run by hand: no engine object is its
	}
	// Inspect under the lock: a state listed before an action took the
	// lock is stale.
	cur, err := drv.Inspect(ctx, id)
	if err != nil {
		s.log.Warn("container reconcile: inspecting failed", "container", id, "err", err)
		return
	}
	st = &cur
	if c == nil {
		if st.State != runtime.StateMissing && !s.isPoolMember(ctx, id) {
			// Made by this installation (the driver lists no other) for a
			// record that is gone: a delete whose engine step failed.
			if err := drv.Delete(ctx, id, false); err != nil {
				s.log.Warn("container reconcile: removing an engine container without a record failed", "container", id, "err", err)
			} else {
				s.log.Info("container reconcile: removed an engine container without a record", "container", id)
			}
		}
		return
	}
	record := func(status, reason string, mutate func(*Container)) {
		if _, err := s.move(ctx, id, []string{c.Status}, status, reason, mutate); err != nil {
			s.log.Warn("container reconcile: recording the engine's state failed", "container", id, "err", err)
		} else if c.Status != status {
			s.log.Info("container reconciled", "container", id, "from", c.Status, "to", status, "reason", reason)
		}
	}
	switch c.Status {
	case StatusDeleting:
		if err := s.finishDelete(ctx, c); err != nil {
			s.log.Warn("container reconcile: finishing a delete failed", "container", id, "err", err)
		}
	case StatusCreating:
		// A create interrupted (a control plane killed mid-way): its
		// steps are idempotent, so it runs again.
		unlock()
		locked = false
		s.provisionAsync(id)
	case StatusRunning, StatusPaused:
		switch st.State {
		case runtime.StateMissing:
			record(StatusFailed, removedReason, func(c *Container) { c.AgentAddr = "" })
		case runtime.StateExited, runtime.StateCreated:
			record(StatusStopped, exitedReason(st), func(c *Container) { c.AgentAddr = "" })
		case runtime.StateDead:
			record(StatusFailed, exitedReason(st), func(c *Container) { c.AgentAddr = "" })
		case runtime.StatePaused:
			record(StatusPaused, "", nil)
		case runtime.StateRunning:
			if c.Status == StatusPaused || (st.Addr != "" && st.Addr != c.AgentAddr) {
				s.awaitHealthy(id, c.Status)
			}
		}
	case StatusStopped, StatusFailed:
		switch st.State {
		case runtime.StateRunning:
			// Started by the engine (autostart after an engine restart)
			// or by hand: running once the agent answers.
			s.awaitHealthy(id, c.Status)
		case runtime.StateMissing:
			if c.Status == StatusStopped {
				record(StatusFailed, removedReason, nil)
			}
		}
	}
}

// awaitHealthy records container id running once its agent answers the
// health check (within the enrolment timeout), if its record is still in
// status from then.
func (s *Service) awaitHealthy(id, from string) {
	s.background(id, func(ctx context.Context) {
		addr, reason := s.awaitAgent(ctx, id, time.Now().Add(s.lc.rt.EnrollTimeout), false, nil)
		if reason != "" || ctx.Err() != nil {
			return // the next event or pass decides
		}
		unlock := s.lc.lock(id)
		defer unlock()
		if _, err := s.move(ctx, id, []string{from}, StatusRunning, "", func(c *Container) { c.AgentAddr = addr }); err != nil {
			s.log.Warn("container reconcile: recording running failed", "container", id, "err", err)
		}
	})
}

const removedReason = "the engine holds no container for it: it was removed outside the control plane; " +
	"start it to make it again from its record (the workspace may be lost), or delete it"

func exitedReason(st *runtime.Status) string {
	why := st.Reason
	if why == "" {
		why = "no reason given"
	}
	return "the engine reports the container " + string(st.State) + " outside the control plane (" + why + "); start it again"
}
