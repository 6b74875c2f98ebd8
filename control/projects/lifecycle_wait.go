package projects

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"deckhand/control/runtime"
	"deckhand/platform/store"
)

// How the lifecycle waits for a container's agent. A container is running
// once its agent has enrolled (its first authenticated request, seen by
// this process or, on PostgreSQL, by another replica) and its gateway
// answers the health check. The health check is asked on a short,
// growing schedule from the moment the engine reports the address (an
// agent starts in a fraction of a second, and a refused connection costs
// nothing); an enrolment seen by this process and a status written by it
// wake the waits at once (signals), and the store is read again on a
// slower schedule for what another replica saw.

// Schedules of the waits.
const (
	// healthFirst and healthMax bound the interval between two health
	// checks of an agent starting.
	healthFirst = 5 * time.Millisecond
	healthMax   = 50 * time.Millisecond
	// storeEvery is how often a wait reads the store for what no signal
	// of this process reports (another replica's enrolment or status).
	storeEvery = 100 * time.Millisecond
	// inspectEvery is how often a wait asks the engine whether the
	// container still runs, once it knows the address.
	inspectEvery = 500 * time.Millisecond
)

// signals wake the waits on a container in this process: an enrolment
// noted, a status written.
type signals struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// sub is a channel that receives (coalesced) once container id changes,
// and its release.
func (g *signals) sub(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	g.mu.Lock()
	if g.subs == nil {
		g.subs = map[string]map[chan struct{}]struct{}{}
	}
	if g.subs[id] == nil {
		g.subs[id] = map[chan struct{}]struct{}{}
	}
	g.subs[id][ch] = struct{}{}
	g.mu.Unlock()
	return ch, func() {
		g.mu.Lock()
		delete(g.subs[id], ch)
		if len(g.subs[id]) == 0 {
			delete(g.subs, id)
		}
		g.mu.Unlock()
	}
}

// fire wakes every wait on container id; it never blocks.
func (g *signals) fire(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for ch := range g.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Changed answers a channel that receives once container id's record
// changes in this process (status, enrolment), and its release: a waiter
// (the platform proxy's wake) reads the record again when it fires, and
// on its own schedule for changes another replica makes.
func (s *Service) Changed(id string) (<-chan struct{}, func()) {
	return s.lc.signals.sub(id)
}

// phases times the steps of one container's way to running, for the
// debug log: where a create's time goes.
type phases struct {
	origin time.Time
	marks  []string
	// writesEnrolment says the running write after this wait records an
	// enrolment this process saw (keepEnrolment), so the wait need not
	// read it from the store.
	writesEnrolment bool
}

func newPhases(origin time.Time) *phases {
	if origin.IsZero() {
		origin = time.Now()
	}
	return &phases{origin: origin}
}

// mark records that step ended now.
func (p *phases) mark(step string) { p.markAt(step, time.Now()) }

// markAt records that step ended at t (a time another party reports).
func (p *phases) markAt(step string, t time.Time) {
	if p == nil {
		return
	}
	p.marks = append(p.marks, fmt.Sprintf("%s=%d", step, t.Sub(p.origin).Milliseconds()))
}

// log writes the steps (milliseconds since the origin) at debug level.
func (p *phases) log(log *slog.Logger, msg, id string) {
	if p == nil || !log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	log.Debug(msg, "container", id, "ms", strings.Join(p.marks, " "))
}

// awaitAgent waits until container id's agent has enrolled (when
// enrol) and its gateway answers the health check, or deadline: the
// agent's address, or the reason it is not running. ph, when given,
// times the steps.
func (s *Service) awaitAgent(ctx context.Context, id string, deadline time.Time, enrol bool, ph *phases) (addr, reason string) {
	changed, release := s.lc.signals.sub(id)
	defer release()
	enrolled, healthy, lastErr := !enrol, false, ""
	var lastStore, lastInspect time.Time
	every := healthFirst
	// An enrolment this process sees counts at once (its signal) when the
	// running write records it; the store says what another replica saw.
	early := ph != nil && ph.writesEnrolment
	var since time.Time
	if early {
		since = ph.origin
	}
	for {
		now := time.Now()
		if !enrolled && early {
			if t, ok := s.enrolledSince(id, since); ok {
				enrolled = true
				ph.markAt("enrolled", t)
			}
		}
		if !enrolled && now.Sub(lastStore) >= storeEvery {
			c, err := s.loadContainer(ctx, id)
			if err != nil || c == nil {
				return "", "the container's record is gone"
			}
			lastStore = now
			if enrolled = c.EnrolledAt != nil; enrolled {
				ph.mark("enrolled")
			}
		}
		if addr == "" || now.Sub(lastInspect) >= inspectEvery {
			st, err := s.lc.rt.Driver.Inspect(ctx, id)
			lastInspect = now
			switch {
			case err != nil:
				lastErr = engineReason(err, "")
			case st.State == runtime.StateMissing:
				return "", "the engine holds no container for it any more (removed outside the control plane)"
			case st.State == runtime.StateExited || st.State == runtime.StateDead:
				why := st.Reason
				if why == "" {
					why = string(st.State)
				}
				return "", "the container's agent exited before it was running (" + why + "): the image's entrypoint must be the deckhand agent; see the engine's logs of the container"
			case st.Addr != "" && st.Addr != addr:
				addr, healthy = st.Addr, false
				if !st.StartedAt.IsZero() {
					// The engine's word for when the agent's process began.
					ph.markAt("process_started", st.StartedAt)
				}
				ph.mark("addr")
			}
		}
		if addr != "" && !healthy {
			if herr := s.checkHealth(ctx, addr); herr == nil {
				healthy = true
				ph.mark("healthy")
			} else {
				lastErr = herr.Error()
			}
		}
		if enrolled && healthy {
			return addr, ""
		}
		if time.Now().After(deadline) {
			if !enrolled {
				return "", fmt.Sprintf("the agent never enrolled within %s: it did not reach the control plane at %s with its token "+
					"(check the image's entrypoint is the deckhand agent, that the URL is reachable from the engine's network, or set --agent-control-url)",
					s.lc.rt.EnrollTimeout, s.agentURLWords())
			}
			return "", fmt.Sprintf("the agent enrolled but its gateway did not answer the health check within %s: %s", s.lc.rt.EnrollTimeout, lastErr)
		}
		wait := every
		if healthy {
			// Only the enrolment is missing: its signal, or the store.
			wait = storeEvery
		} else {
			every = min(every*3/2, healthMax)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", "the control plane stopped"
		case <-changed:
			lastStore = time.Time{}
		case <-t.C:
		}
		t.Stop()
	}
}

// mintToken mints container id's agent token (first: only when it has
// none, so its engine container cannot exist yet): the token and the
// record as written; a nil record when the container had a token
// already (first) or is gone.
func (s *Service) mintToken(ctx context.Context, id string, first bool) (string, *Container, error) {
	var token string
	var out *Container
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		token, out = "", nil
		c, err := getContainer(tx, id)
		if err != nil || c == nil {
			return err
		}
		if first && tx.CountPrefix(bucketAgentTokens, id+"/") > 0 {
			return nil
		}
		token, err = s.mintAgentToken(tx, ctx, c)
		out = c
		return err
	})
	return token, out, err
}

// mintCreated mints, in a create's transaction, the agent token of each
// container of cs the runtime will make (one write less on the way to
// running); provision takes them from pending. The transaction may run
// again: each run mints anew.
func (s *Service) mintCreated(tx *store.Tx, ctx context.Context, cs []*Container) (map[string]string, error) {
	if s.lc.rt.Driver == nil {
		return nil, nil
	}
	out := map[string]string{}
	for _, c := range cs {
		if c.ImageName == "" {
			continue
		}
		token, err := s.mintAgentToken(tx, ctx, c)
		if err != nil {
			return nil, err
		}
		out[c.ID] = token
	}
	return out, nil
}

// provisionMinted provisions container id, made by a create that minted
// its agent token (empty: none).
func (s *Service) provisionMinted(id, token string) {
	if token != "" {
		s.lc.mu.Lock()
		s.lc.minted[id] = token
		s.lc.mu.Unlock()
	}
	s.provisionAsync(id)
}

// takeMinted is the token a create minted for container id and has not
// given to the engine yet.
func (s *Service) takeMinted(id string) string {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	t := s.lc.minted[id]
	delete(s.lc.minted, id)
	return t
}
