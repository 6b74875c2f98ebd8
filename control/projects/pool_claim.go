package projects

import (
	"context"
	"fmt"
	"time"

	"deckhand/control/runtime"
	"deckhand/platform/store"
)

// poolClaim is a create's use of the warm pool (pool.go): which of its
// containers took a pooled one, and their new tokens.
type poolClaim struct {
	s     *Service
	image string
	name  string // the engine reference the create resolved
	out   []*Container
	fresh []string          // the ids the create made, before any claim
	taken map[string]string // claimed id → its new agent token
	// via is where each claimed agent takes its token (pool_handoff.go).
	via map[string]handoffTo
}

// handoffTo is a claimed agent's address and the hash of the pool's
// token it holds.
type handoffTo struct {
	addr, prevHash string
}

// poolEligible says whether a create may take a pooled container: one
// made from the image alone, as the pool makes them (limits, environment
// and restart policy are the engine's at create; a snapshot or a kept
// workspace are other files).
func (in *ContainerCreate) poolEligible() bool {
	return in.SnapshotID == "" && in.WorkspaceID == "" && in.ImageID != "" && len(in.Env) == 0 && !in.Autostart &&
		(in.Resources == nil || *in.Resources == Resources{})
}

// newPoolClaim prepares the claims of a create of out (nil when it cannot
// claim).
func (s *Service) newPoolClaim(in *ContainerCreate, imageName string, out []*Container) *poolClaim {
	if !in.poolEligible() || s.poolCapable() != nil {
		return nil
	}
	c := &poolClaim{s: s, image: in.ImageID, name: imageName, out: out}
	for _, o := range out {
		c.fresh = append(c.fresh, o.ID)
	}
	return c
}

// take, in the create's transaction, gives each container it can a ready
// member of the image: the member's record and its token go, the
// container takes its id and a token minted now. Two creates that read
// the same member cannot both commit: bbolt has one writer, and on
// PostgreSQL the second delete of the row fails the serializable
// transaction, which runs again and takes another member (or none). The
// transaction may run again, so it starts from the create's own ids.
func (c *poolClaim) take(tx *store.Tx, ctx context.Context) error {
	if c == nil {
		return nil
	}
	c.taken, c.via = map[string]string{}, map[string]handoffTo{}
	for i, o := range c.out {
		o.ID = c.fresh[i]
	}
	ms, err := imageMembers(tx, c.image)
	if err != nil {
		return err
	}
	k := 0
	for _, o := range c.out {
		for k < len(ms) && (ms[k].Status != poolReady || ms[k].ImageName != c.name) {
			k++
		}
		if k == len(ms) {
			return nil
		}
		m := ms[k]
		k++
		if err := tx.Delete(bucketPool, m.ID); err != nil {
			return err
		}
		o.ID = m.ID
		prev, err := poolTokenHash(tx, m.ID)
		if err != nil {
			return err
		}
		c.via[m.ID] = handoffTo{addr: m.Addr, prevHash: prev}
		token, err := c.s.mintAgentToken(tx, ctx, o)
		if err != nil {
			return err
		}
		c.taken[o.ID] = token
	}
	return nil
}

// started starts container o when it was claimed and answers true (o is
// then as recorded: running, or creating when the claim fell back to a
// cold create); false leaves o to the usual provisioning.
func (c *poolClaim) started(ctx context.Context, o *Container) bool {
	if c == nil {
		return false
	}
	token, ok := c.taken[o.ID]
	if !ok {
		return false
	}
	if rec := c.s.startClaimed(context.WithoutCancel(ctx), o.ID, token, c.via[o.ID], o.CreatedAt); rec != nil {
		*o = *rec
	}
	return true
}

// refill fills the pool again when the create took from it.
func (c *poolClaim) refill() {
	if c != nil && len(c.taken) > 0 {
		c.s.poolKick(c.image)
	}
}

// startClaimed thaws claimed container id and hands its agent the new
// token over the agent's gateway (pool_handoff.go); the agent answers once
// it has synced with it, so the record is running then. An agent that
// does not take the hand-over gets the token written over its token file
// through the engine, and the claim waits for its enrolment with it. When
// any step fails the engine container goes and the container is made
// again from its record, as any create.
func (s *Service) startClaimed(ctx context.Context, id, token string, via handoffTo, created time.Time) *Container {
	s.lc.mu.Lock()
	mine := !s.lc.inflight[id]
	if mine {
		s.lc.inflight[id] = true
	}
	s.lc.mu.Unlock()
	release := func() {
		if mine {
			s.lc.mu.Lock()
			delete(s.lc.inflight, id)
			s.lc.mu.Unlock()
		}
	}
	drv := s.lc.rt.Driver
	unlock := s.lc.lock(id)
	ph := newPhases(created)
	ph.mark("claimed")
	err := drv.Resume(ctx, id)
	var addr, reason string
	if err == nil {
		ph.mark("resumed")
		addr, reason = s.takeToken(ctx, id, token, via, ph)
	}
	if err == nil && reason == "" {
		rec, err := s.move(ctx, id, []string{StatusCreating}, StatusRunning, "", func(c *Container) { c.AgentAddr = addr })
		unlock()
		release()
		if err != nil {
			s.log.Warn("warm pool: recording a claimed container running failed", "container", id, "err", err)
		}
		ph.mark("running")
		ph.log(s.log, "container: claimed", id)
		return rec
	}
	if reason == "" {
		reason = err.Error()
	}
	s.log.Warn("warm pool: a claimed container did not come up; making it again", "container", id, "reason", reason)
	if err := drv.Delete(ctx, id, false); err != nil {
		s.log.Warn("warm pool: removing a claimed container failed", "container", id, "err", err)
	}
	unlock()
	release()
	s.provisionAsync(id)
	rec, _ := s.loadContainer(ctx, id)
	return rec
}

// takeToken gets thawed claimed container id's agent to enrol with token:
// its address, or the reason it did not.
func (s *Service) takeToken(ctx context.Context, id, token string, via handoffTo, ph *phases) (addr, reason string) {
	if via.addr != "" && via.prevHash != "" {
		err := s.handOver(ctx, via.addr, id, via.prevHash, token)
		if err == nil {
			ph.mark("handed_over")
			// The agent's answer is not signed: the record says whether
			// the control plane saw the new token.
			c, lerr := s.loadContainer(ctx, id)
			if lerr == nil && c != nil && c.EnrolledAt != nil {
				ph.mark("enrolled")
				return via.addr, ""
			}
			err = fmt.Errorf("the agent answered, but the control plane saw no enrolment with the new token (%v)", lerr)
		}
		s.log.Info("warm pool: the claimed agent did not take its token over its gateway; writing it through the engine", "container", id, "err", err)
	}
	// A thawed agent enrols with its new token on its next request to
	// the control plane, which the pool's token no longer opens.
	if err := s.lc.rt.Driver.(runtime.FileWriter).WriteFiles(ctx, id, []runtime.File{{Path: agentTokenPath, Content: []byte(token + "\n"), Mode: 0o400}}); err != nil {
		return "", err.Error()
	}
	ph.mark("token_written")
	addr, reason = s.awaitAgent(ctx, id, time.Now().Add(claimTimeout), true, ph)
	if reason != "" {
		reason = "its agent did not come up with its new token within " + claimTimeout.String() + ": " + reason
	}
	return addr, reason
}
