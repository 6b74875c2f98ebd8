package projects

import (
	"context"

	"deckhand/control/runtime"
	"deckhand/platform/store"
)

// The pool's reconciler keeps its records and the engine in agreement,
// at start (after a control-plane restart) and every ReconcileEvery: a
// ready member whose engine container is not paused, and a member being
// made by no filler (a fill interrupted), are removed whole; then every
// image with a pool size fills again. An engine container of the pool
// whose record is gone is the container reconciler's (reconcile.go): no
// record names it, so it is removed.

// startPool runs the pool's reconciler until the lifecycle's context
// ends (Bootstrap, once, with a driver).
func (s *Service) startPool() {
	s.lc.wg.Add(1)
	go func() {
		defer s.lc.wg.Done()
		ctx := s.lc.ctx
		for {
			s.reconcilePool(ctx)
			if !sleepCtx(ctx, s.lc.rt.ReconcileEvery) {
				return
			}
		}
	}()
}

// reconcilePool is one pass of the pool's reconciler.
func (s *Service) reconcilePool(ctx context.Context) {
	engine, err := s.lc.rt.Driver.List(ctx)
	if err != nil {
		s.log.Warn("warm pool: listing the engine's containers failed", "err", err)
		return
	}
	var members []poolMember
	images := map[string]bool{}
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		if members, err = store.Under[poolMember](tx, bucketPool, ""); err != nil {
			return err
		}
		images = map[string]bool{}
		for _, m := range members {
			images[m.ImageID] = true
		}
		return tx.ForEach(bucketPoolSizes, func(key string, _ []byte) error {
			images[key] = true
			return nil
		})
	})
	if err != nil {
		s.log.Warn("warm pool: reading the records failed", "err", err)
		return
	}
	for _, m := range members {
		st, ok := engine[m.ID]
		switch {
		case m.Status == poolReady && ok && st.State == runtime.StatePaused:
		case m.Status == poolFilling && s.poolMaking(m.ID):
		case m.Status == poolReady && s.stillPaused(ctx, m.ID):
			// Listed before it was frozen and marked ready.
		default:
			s.log.Info("warm pool: removing a member the engine does not hold as made", "member", m.ID, "status", m.Status, "engine", string(st.State))
			s.dropMember(ctx, m.ID)
		}
	}
	for image := range images {
		s.poolKick(image)
	}
}

func (s *Service) stillPaused(ctx context.Context, id string) bool {
	st, err := s.lc.rt.Driver.Inspect(ctx, id)
	return err == nil && st.State == runtime.StatePaused
}
