package projects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/runtime"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// provisionAsync provisions container id in the background unless work
// on it is already under way.
func (s *Service) provisionAsync(id string) {
	s.background(id, func(ctx context.Context) { s.provision(ctx, id) })
}

// background runs fn for container id in its own goroutine, once at a
// time per container; the reconciler leaves a container alone meanwhile.
func (s *Service) background(id string, fn func(ctx context.Context)) {
	if s.lc.rt.Driver == nil {
		return
	}
	s.lc.mu.Lock()
	if s.lc.inflight[id] || s.lc.ctx.Err() != nil {
		s.lc.mu.Unlock()
		return
	}
	s.lc.inflight[id] = true
	s.lc.wg.Add(1)
	s.lc.mu.Unlock()
	go func() {
		defer s.lc.wg.Done()
		defer func() {
			s.lc.mu.Lock()
			delete(s.lc.inflight, id)
			s.lc.mu.Unlock()
		}()
		fn(s.lc.ctx)
	}()
}

func (s *Service) isInflight(id string) bool {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	return s.lc.inflight[id]
}

// provision takes a creating container to running or failed: the image
// checked, the engine container made (with a fresh agent token) unless it
// exists, started, then the agent's enrolment and health awaited. Each
// step is idempotent, so a control plane killed mid-way repeats it on
// start.
func (s *Service) provision(ctx context.Context, id string) {
	drv := s.lc.rt.Driver
	deadline := time.Now().Add(s.lc.rt.EnrollTimeout)
	var ph *phases
	fail := func(reason string) {
		if _, err := s.move(ctx, id, []string{StatusCreating}, StatusFailed, reason, nil); err != nil {
			s.log.Warn("container: recording failed", "container", id, "err", err)
		}
	}
	step := func() (done bool) {
		unlock := s.lc.lock(id)
		defer unlock()
		c, err := s.loadContainer(ctx, id)
		if err != nil || c == nil || c.Status != StatusCreating {
			return true
		}
		ph = newPhases(c.CreatedAt)
		ph.writesEnrolment = true
		ph.mark("begun")
		controlURL, err := s.agentURL(ctx)
		if err != nil {
			fail(engineReason(err, c.ImageName))
			return true
		}
		// The engine container is made only after the record has an agent
		// token. A create's transaction mints it (takeMinted); a record
		// without one has no engine container either, so its token is
		// minted at once and the engine asked once. One with a token may
		// have its engine container already (a control plane stopped
		// mid-way): the engine is asked first, and a token minted only
		// for a container made now.
		token, minted, err := s.takeMinted(id), c, error(nil)
		if token == "" {
			token, minted, err = s.mintToken(ctx, id, true)
		}
		if err != nil {
			fail("the control plane could not mint the agent's token: " + err.Error())
			return true
		}
		if minted == nil {
			st, err := drv.Inspect(ctx, id)
			if err != nil {
				fail(engineReason(err, c.ImageName))
				return true
			}
			ph.mark("inspected")
			if st.State == runtime.StateMissing {
				if token, minted, err = s.mintToken(ctx, id, false); err != nil {
					fail("the control plane could not mint the agent's token: " + err.Error())
					return true
				}
			}
		}
		if minted != nil {
			c = minted
			ph.mark("token")
			// The engine's refusal names a missing image
			// (runtime.ErrImageMissing).
			if err := drv.Create(runtime.WithMarks(ctx, ph.mark), s.spec(c, token, controlURL)); err != nil {
				fail(engineReason(err, c.ImageName))
				return true
			}
			ph.mark("engine_create")
		}
		if err := drv.Start(ctx, id); err != nil {
			fail(engineReason(err, c.ImageName))
			return true
		}
		ph.mark("engine_start")
		return false
	}
	if step() {
		return
	}
	addr, reason := s.awaitAgent(ctx, id, deadline, true, ph)
	unlock := s.lc.lock(id)
	defer unlock()
	if ctx.Err() != nil {
		return // closing: the next start reconciles
	}
	if reason != "" {
		fail(reason)
		return
	}
	if _, err := s.move(ctx, id, []string{StatusCreating}, StatusRunning, "", func(c *Container) {
		c.AgentAddr = addr
		s.keepEnrolment(c, ph.origin)
	}); err != nil {
		s.log.Warn("container: recording running", "container", id, "err", err)
	}
	ph.mark("running")
	ph.log(s.log, "container: provisioned", id)
}

// spec is the engine's description of container c with its agent token.
func (s *Service) spec(c *Container, token, controlURL string) runtime.Spec {
	files := []runtime.File{{Path: agentTokenPath, Content: []byte(token + "\n"), Mode: 0o400}}
	if s.env.Config.Keys != nil {
		if raw, err := json.Marshal(s.env.Config.Keys.PublicSet()); err == nil {
			files = append(files, runtime.File{Path: controlKeyPath, Content: raw, Mode: 0o444})
		}
	}
	return runtime.Spec{ID: c.ID, ProjectID: c.ProjectID, Name: c.Name, Image: c.ImageName,
		Resources: runtime.Resources{CPUs: c.Resources.CPUs, MemoryMB: c.Resources.MemoryMB},
		Autostart: c.Autostart, Env: c.Env, Files: files, Args: s.agentArgs(c, controlURL), Workspace: c.WorkspaceID}
}

// checkHealth GETs the agent's health at addr (its gateway on the
// engine's network).
func (s *Service) checkHealth(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+healthPath, nil)
	if err != nil {
		return err
	}
	resp, err := s.lc.rt.HealthClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s%s answered %d", addr, healthPath, resp.StatusCode)
	}
	return nil
}

// healthPath is the agent gateway's health (agent/gateway.HealthPath).
const healthPath = "/_agent/health"

func (s *Service) loadContainer(ctx context.Context, id string) (*Container, error) {
	var c *Container
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		c, err = getContainer(tx, id)
		return err
	})
	return c, err
}

// noteEnrolled records that the agent of token tokenID (of container id)
// has authenticated: once per token and process, one write.
func (s *Service) noteEnrolled(ctx context.Context, id, tokenID string) {
	if _, seen := s.lc.enrolled.Load(tokenID); seen {
		return
	}
	// A wait of this process goes on at once (its running write records
	// the enrolment too), rather than after this write.
	s.lc.enrolling.Store(id, s.now())
	s.lc.signals.fire(id)
	record := true
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		c, err := getContainer(tx, id)
		if err == nil && c == nil {
			record = false
			return s.poolEnrolled(tx, id)
		}
		if err != nil || c.EnrolledAt != nil {
			return err
		}
		now := s.now()
		c.EnrolledAt = &now
		return tx.Put(bucketContainers, id, c)
	})
	if !record {
		// A pool member's: no container's wait reads it.
		s.lc.enrolling.Delete(id)
	}
	if err != nil {
		s.log.Warn("container: recording the agent's enrolment", "container", id, "err", err)
		return
	}
	s.lc.enrolled.Store(tokenID, struct{}{})
	s.lc.signals.fire(id)
}

// enrolledSince answers when this process saw container id's agent
// enrol (its first authenticated request) at or after since.
func (s *Service) enrolledSince(id string, since time.Time) (time.Time, bool) {
	v, ok := s.lc.enrolling.Load(id)
	if !ok {
		return time.Time{}, false
	}
	t := v.(time.Time)
	return t, !t.Before(since)
}

// keepEnrolment writes into c the enrolment this process saw since a
// wait began, when its own write has not landed yet.
func (s *Service) keepEnrolment(c *Container, since time.Time) {
	if c.EnrolledAt != nil {
		return
	}
	if t, ok := s.enrolledSince(c.ID, since); ok {
		c.EnrolledAt = &t
	}
}

// errRecordsOnly answers an engine action under --runtime none.
var errRecordsOnly = &fault.Error{Code: fault.CodeConflict, Details: "runtime",
	Message: "this control plane runs no containers (--runtime none): start and stop the container's agent yourself"}

// errRegistered answers an engine action on a container an admin
// registered (no image: its agent is run by hand).
var errRegistered = &fault.Error{Code: fault.CodeConflict, Details: "image_id",
	Message: "this container was registered without an image (its agent runs by hand): the control plane does not start or stop it"}

// engineFor is the driver for acting on container c, or why not.
func (s *Service) engineFor(c *Container) (runtime.Driver, error) {
	if s.lc.rt.Driver == nil {
		return nil, errRecordsOnly
	}
	if c.ImageName == "" {
		return nil, errRegistered
	}
	return s.serverEngine(c), nil
}

// ContainerAction is POST /api/v1/containers/{id}/start|stop|restart.
type ContainerAction struct {
	ContainerRef
	Body *struct{}
}

// locked takes container id's lock and answers its record and engine; on
// an error the lock is already let go.
func (s *Service) locked(ctx context.Context, id string) (*Container, runtime.Driver, func(), error) {
	unlock := s.lc.lock(id)
	c, err := s.current(ctx, id)
	if err == nil {
		var drv runtime.Driver
		if drv, err = s.engineFor(c); err == nil {
			return c, drv, unlock, nil
		}
	}
	unlock()
	return nil, nil, nil, err
}

// StartContainer starts a stopped or failed container and answers once its
// agent is healthy (running) or why not (failed). A container whose engine
// object is gone (a create that failed, a removal behind the control
// plane's back) is made again from its record: 200 in creating.
func (s *Service) StartContainer(ctx context.Context, in ContainerAction) (*Container, error) {
	id := in.ID
	c, drv, unlock, err := s.locked(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	switch c.Status {
	case StatusRunning, StatusCreating:
		return s.decorate(c), nil
	case StatusDeleting:
		return nil, errDeleting(id)
	}
	if c.Recreate {
		// Limits or autostart changed while it was stopped.
		c, err = s.recreate(ctx, c)
		if err != nil {
			return nil, err
		}
		return s.decorate(c), nil
	}
	st, err := drv.Inspect(ctx, id)
	if err != nil {
		return nil, engineErr("start the container", err)
	}
	if st.State == runtime.StateMissing {
		c, err = s.move(ctx, id, nil, StatusCreating, "", nil)
		if err != nil {
			return nil, err
		}
		s.provisionAsync(id)
		return s.decorate(c), nil
	}
	if st.State == runtime.StatePaused {
		err = drv.Resume(ctx, id)
	} else {
		err = drv.Start(ctx, id)
	}
	if err != nil {
		return nil, engineErr("start the container", err)
	}
	return s.settle(ctx, id)
}

// settle waits (up to the enrolment timeout) for container id's agent to
// answer, and records running or failed.
func (s *Service) settle(ctx context.Context, id string) (*Container, error) {
	addr, reason := s.awaitAgent(ctx, id, time.Now().Add(s.lc.rt.EnrollTimeout), false, nil)
	if reason != "" {
		return s.moveTo(ctx, id, StatusFailed, reason, nil)
	}
	return s.moveTo(ctx, id, StatusRunning, "", func(c *Container) { c.AgentAddr = addr })
}

// moveTo moves container id to status whatever its status, and answers
// it as written (404 when it is gone).
func (s *Service) moveTo(ctx context.Context, id, status, reason string, mutate func(*Container)) (*Container, error) {
	c, err := s.move(ctx, id, nil, status, reason, mutate)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fault.NotFound("container", id)
	}
	return s.decorate(c), nil
}

// engineFailed answers the error of engine action op on container id: a
// container whose engine object is gone is failed, with the reason.
func (s *Service) engineFailed(ctx context.Context, id, op string, err error) (*Container, error) {
	if errors.Is(err, runtime.ErrNotFound) {
		return s.moveTo(ctx, id, StatusFailed, removedReason, func(c *Container) { c.AgentAddr = "" })
	}
	return nil, engineErr(op, err)
}

// StopContainer stops a container (its agent gets 10 s to stop); a
// stopped one answers as it is.
func (s *Service) StopContainer(ctx context.Context, in ContainerAction) (*Container, error) {
	id := in.ID
	c, drv, unlock, err := s.locked(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if c.Status == StatusDeleting {
		return nil, errDeleting(id)
	}
	if err := drv.Stop(ctx, id, stopGrace); err != nil {
		return s.engineFailed(ctx, id, "stop the container", err)
	}
	return s.moveTo(ctx, id, StatusStopped, "", func(c *Container) { c.AgentAddr = "" })
}

const stopGrace = 10 * time.Second

// RestartContainer stops and starts a container and answers once its agent
// is healthy again.
func (s *Service) RestartContainer(ctx context.Context, in ContainerAction) (*Container, error) {
	id := in.ID
	c, drv, unlock, err := s.locked(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.Status == StatusDeleting {
		unlock()
		return nil, errDeleting(id)
	}
	if c.Status == StatusCreating {
		unlock()
		return s.decorate(c), nil
	}
	st, err := drv.Inspect(ctx, id)
	if err != nil {
		unlock()
		return nil, engineErr("restart the container", err)
	}
	if st.State == runtime.StateMissing {
		unlock()
		return s.StartContainer(ctx, in)
	}
	defer unlock()
	if err := drv.Restart(ctx, id, stopGrace); err != nil {
		return nil, engineErr("restart the container", err)
	}
	return s.settle(ctx, id)
}

// ContainerDelete is DELETE /api/v1/containers/{id}.
type ContainerDelete struct {
	ContainerRef
	KeepWorkspace bool `query:"keep_workspace" doc:"keep the workspace volume in the engine (the container and its record go)"`
}

// DeleteContainer removes the container from the engine (its workspace
// volume too, unless keep_workspace) and then its record, agent tokens,
// network configuration and proxy permissions document. When the engine
// cannot be reached the record stays in deleting, with the reason, and the
// reconciler finishes the delete once it can.
func (s *Service) DeleteContainer(ctx context.Context, in ContainerDelete) error {
	id := in.ID
	unlock := s.lc.lock(id)
	defer unlock()
	c, err := s.move(ctx, id, nil, StatusDeleting, "", func(c *Container) { c.KeepWorkspace = in.KeepWorkspace })
	if err != nil {
		return err
	}
	if c == nil {
		return fault.NotFound("container", id)
	}
	return s.finishDelete(ctx, c)
}

// finishDelete removes deleting container c's engine objects and then its
// records (the caller holds its lock).
func (s *Service) finishDelete(ctx context.Context, c *Container) error {
	if drv := s.lc.rt.Driver; drv != nil && c.ImageName != "" {
		if err := drv.Delete(ctx, c.ID, c.KeepWorkspace); err != nil {
			reason := "deleting: " + engineReason(err, c.ImageName)
			if _, merr := s.move(ctx, c.ID, []string{StatusDeleting}, StatusDeleting, reason, nil); merr != nil {
				s.log.Warn("container: recording the delete's reason", "container", c.ID, "err", merr)
			}
			return engineErr("delete the container", err)
		}
	}
	held := s.heldSnapshots(ctx, c)
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		return s.dropContainer(tx, c.ID)
	})
	if err == nil && c.ImageName != "" {
		s.releaseSnapshots(ctx, s.lc.rt.Driver, c.ProjectID, held, c.ID)
	}
	return fault.Wrap("delete the container", err)
}

// dropContainer deletes container id's record and everything keyed by it.
func (s *Service) dropContainer(tx *store.Tx, id string) error {
	s.lc.enrolling.Delete(id)
	if err := dropAgentTokens(tx, id); err != nil {
		return err
	}
	if err := s.dropStateRecords(tx, id); err != nil {
		return err
	}
	if err := dropSSHKeys(tx, id); err != nil {
		return err
	}
	for _, d := range []struct{ bucket, key string }{{bucketNetwork, id}, {bucketNetCreds, id}, {bucketDocs, containerDocKey(id)},
		{bucketDocVersion, containerDocKey(id)}, {bucketContainers, id}} {
		if err := tx.Delete(d.bucket, d.key); err != nil {
			return err
		}
	}
	return nil
}

func errDeleting(id string) error {
	return fault.Errorf(fault.CodeConflict, "container %s is being deleted", id)
}

// current is container id, 404 when gone.
func (s *Service) current(ctx context.Context, id string) (*Container, error) {
	return domain.Transact(ctx, s.db.ViewContext, "read the container", func(tx *store.Tx) (*Container, error) {
		return findContainer(tx, id)
	})
}

// agentURL is the control-plane URL the agents are given.
func (s *Service) agentURL(ctx context.Context) (string, error) {
	if s.lc.rt.AgentControlURL == nil {
		return "", fault.Errorf(fault.CodeInternal, "no control-plane URL for the agents")
	}
	return s.lc.rt.AgentControlURL(ctx)
}

// agentURLWords names the agents' URL in a reason.
func (s *Service) agentURLWords() string {
	if u, err := s.agentURL(s.lc.ctx); err == nil {
		return u
	}
	return "its --agent-control-url"
}

// ContainerUpdate is PATCH /api/v1/containers/{id}.
type ContainerUpdate struct {
	ContainerRef
	Body ContainerChanges
}

// ContainerChanges are the fields a PATCH may change; absent ones stay.
type ContainerChanges struct {
	Name      *string    `json:"name,omitempty" doc:"1-100 characters, unique in the project"`
	Resources *Resources `json:"resources,omitempty" doc:"new limits (both fields are replaced; 0: the engine's default)"`
	Autostart *bool      `json:"autostart,omitempty" doc:"start again with the engine"`
	// The idle settings: see idle.go.
	IdleTimeoutSeconds *int    `json:"idle_timeout_seconds,omitempty" doc:"idle timeout in seconds: 0 turns it off, else 5-604800 (see the create)"`
	IdleAction         *string `json:"idle_action,omitempty" doc:"stop or pause"`
}

// Validate checks each field given.
func (in *ContainerChanges) Validate() error {
	if in.Name != nil {
		if err := cleanName("name", in.Name); err != nil {
			return err
		}
	}
	if in.Name == nil && in.Resources == nil && in.Autostart == nil && in.IdleTimeoutSeconds == nil && in.IdleAction == nil {
		return fault.Invalid("body", "give name, resources, autostart, idle_timeout_seconds or idle_action")
	}
	if err := validIdleChanges(in.IdleTimeoutSeconds, in.IdleAction); err != nil {
		return err
	}
	return in.Resources.Validate()
}

// UpdateContainer renames a container, changes its limits or its
// autostart. The engine applies limits and the restart policy only to a
// container it makes, so a change of either makes the engine container
// again from the record (the workspace volume is kept): at once when it
// runs (it answers in creating, then running), at its next start when it
// is stopped. Each change writes its event.
func (s *Service) UpdateContainer(ctx context.Context, in ContainerUpdate) (*Container, error) {
	id, ch := in.ID, in.Body
	unlock := s.lc.lock(id)
	defer unlock()
	var recreateNow bool
	out, err := domain.Transact(ctx, s.db.UpdateContext, "update the container", func(tx *store.Tx) (*Container, error) {
		c, err := findContainer(tx, id)
		if err != nil {
			return nil, err
		}
		if c.Status == StatusDeleting {
			return nil, errDeleting(id)
		}
		ev := func(kind string, payload map[string]any) error {
			return s.event(tx, ctx, events.Event{EventType: kind, ResourceType: "container", ResourceID: id,
				ProjectID: c.ProjectID, ContainerID: id, Payload: events.Payload(payload)})
		}
		if ch.Name != nil && *ch.Name != c.Name {
			cs, err := projectContainers(tx, c.ProjectID, 0)
			if err != nil {
				return nil, err
			}
			for _, o := range cs {
				if o.ID != id && strings.EqualFold(o.Name, *ch.Name) {
					return nil, &fault.Error{Code: fault.CodeConflict, Field: "name", Details: "name",
						Message: fmt.Sprintf("name: the project already has a container named %q (names are unique in a project, ignoring case)", *ch.Name)}
				}
			}
			if err := ev("container.renamed", map[string]any{"from": c.Name, "to": *ch.Name}); err != nil {
				return nil, err
			}
			c.Name = *ch.Name
		}
		if err := applyIdle(ev, c, ch.IdleTimeoutSeconds, ch.IdleAction); err != nil {
			return nil, err
		}
		engine := false
		if ch.Resources != nil && *ch.Resources != c.Resources {
			if err := ev("container.resource_updated", map[string]any{"cpus": ch.Resources.CPUs, "memory_mb": ch.Resources.MemoryMB}); err != nil {
				return nil, err
			}
			c.Resources, engine = *ch.Resources, true
		}
		if ch.Autostart != nil && *ch.Autostart != c.Autostart {
			kind := "container.autostart_disabled"
			if *ch.Autostart {
				kind = "container.autostart_enabled"
			}
			if err := ev(kind, map[string]any{"autostart": *ch.Autostart}); err != nil {
				return nil, err
			}
			c.Autostart, engine = *ch.Autostart, true
		}
		if engine && c.ImageName != "" && s.lc.rt.Driver != nil {
			switch c.Status {
			case StatusRunning, StatusPaused:
				recreateNow = true
			case StatusStopped, StatusFailed:
				c.Recreate = true
			}
		}
		c.UpdatedAt = s.now()
		return c, tx.Put(bucketContainers, id, c)
	})
	if err != nil {
		return nil, err
	}
	if recreateNow {
		if out, err = s.recreate(ctx, out); err != nil {
			return nil, err
		}
	}
	return s.decorate(out), nil
}

// recreate removes container c's engine container (keeping its
// workspace) and provisions it again from the record (the caller holds
// its lock).
func (s *Service) recreate(ctx context.Context, c *Container) (*Container, error) {
	if err := s.lc.rt.Driver.Delete(ctx, c.ID, true); err != nil {
		return nil, engineErr("make the engine container again", err)
	}
	c, err := s.move(ctx, c.ID, nil, StatusCreating, "", func(c *Container) { c.Recreate, c.AgentAddr = false, "" })
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errGone
	}
	s.provisionAsync(c.ID)
	return c, nil
}

var errGone = fault.Errorf(fault.CodeNotFound, "the container was deleted meanwhile")
