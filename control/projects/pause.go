package projects

import (
	"context"
	"fmt"
	"net/http"

	"deckhand/control/runtime"
	"deckhand/platform"
	"deckhand/platform/fault"
)

// Pause and resume freeze a running container's processes (the engine's
// cgroup freezer) and thaw them: memory, open connections and the
// process service's output offsets stay as they were, so a follower of
// a process's output resumes after it without loss or repetition.
// paused is a status of the lifecycle; its event is container.paused,
// and a resume writes container.running once the agent answers again.

// PauseContainer freezes a running container; a paused one answers as
// it is.
func (s *Service) PauseContainer(ctx context.Context, in ContainerAction) (*Container, error) {
	id := in.ID
	c, drv, unlock, err := s.locked(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	switch c.Status {
	case StatusPaused:
		return s.decorate(c), nil
	case StatusRunning:
	default:
		return nil, notRunning(id, c.Status, "running", "pause")
	}
	if !drv.Capabilities().Pause {
		return nil, errRuntime(drv, "cannot pause containers")
	}
	if err := drv.Pause(ctx, id); err != nil {
		return s.engineFailed(ctx, id, "pause the container", err)
	}
	return s.moveTo(ctx, id, StatusPaused, "", nil)
}

// ResumeContainer thaws a paused container and answers once its agent
// answers the health check; a running one answers as it is.
func (s *Service) ResumeContainer(ctx context.Context, in ContainerAction) (*Container, error) {
	id := in.ID
	c, drv, unlock, err := s.locked(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	switch c.Status {
	case StatusRunning:
		return s.decorate(c), nil
	case StatusPaused:
	default:
		return nil, notRunning(id, c.Status, "paused", "resume")
	}
	if err := drv.Resume(ctx, id); err != nil {
		return s.engineFailed(ctx, id, "resume the container", err)
	}
	return s.settle(ctx, id)
}

func notRunning(id, status, want, action string) error {
	return &fault.Error{Code: fault.CodeConflict, Details: "status",
		Message: fmt.Sprintf("container %s is %s: only a %s container can %s", id, status, want, action)}
}

// errRuntime answers an action drv's runtime cannot take.
func errRuntime(drv runtime.Driver, cannot string) error {
	return &fault.Error{Code: fault.CodeConflict, Details: "runtime", Message: "the " + drv.Capabilities().Name + " runtime " + cannot}
}

// stateRoutes are the routes of pause, resume, snapshots and workspaces.
func (s *Service) stateRoutes(operate, manage, read platform.Policy, actErrs string) []platform.Route {
	containers := []string{"containers"}
	return append([]platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/pause", OperationID: "pauseContainer", Policy: operate, Tags: containers,
			Summary: "Pause a running container (the engine's freezer)",
			Description: "Freezes every process of the container: memory, open connections and the offsets of the processes' output " +
				"stay as they were, and nothing runs until a resume (or a request through the platform proxy to a container with " +
				"autostart, which resumes it). A paused container answers as it is. 409 when it is not running (status names it); " +
				"409 with --runtime none; 503 when the engine is unreachable. Writes `container.paused`." + actErrs,
			Message: "Container paused", Op: platform.Op(s.PauseContainer)},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/resume", OperationID: "resumeContainer", Policy: operate, Tags: containers,
			Summary: "Resume a paused container",
			Description: "Thaws the container's processes and answers once its agent answers the health check (`running`); a follower " +
				"of a process's output goes on from where it was, losing and repeating nothing. A running container answers as it is. " +
				"409 when it is not paused; 409 with --runtime none; 503 when the engine is unreachable. Writes `container.running`." + actErrs,
			Message: "Container resumed", Op: platform.Op(s.ResumeContainer)},
	}, s.snapshotRoutes(operate, manage, read, actErrs)...)
}
