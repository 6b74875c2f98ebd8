package projects

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"deckhand/control/runtime"
	"deckhand/platform"
	"deckhand/platform/fault"
)

// Idle stop that understands agents. A container with
// idle_timeout_seconds is stopped (or paused, idle_action) once its
// agent has said it was idle for that whole time. Only the agent knows
// what is going on inside: a running process, an open terminal, MCP
// session or WebSocket, a request through its gateway, a keep-alive
// lease. It reports that on the sync path it already keeps with the
// control plane (POST .../activity, with its agent token), and the
// answer tells it when to report next: at the moment its idle time
// would reach the timeout. So the decision is taken on a report made at
// that moment, never on a guess from an older one, and a container
// whose agent does not report is never idle-stopped. Idleness counts
// from the last time the container became running at the latest, so a
// resumed or restarted container starts a fresh count.

// Limits of the idle settings.
const (
	minIdleTimeout = 5
	maxIdleTimeout = 7 * 24 * 3600
	// maxReportIn is the longest the agent waits between two reports:
	// a change of the settings reaches it within that time.
	maxReportIn = 30 * time.Second
	// minReportIn keeps a report's answer from asking for a storm.
	minReportIn = 50 * time.Millisecond
)

// Idle actions.
const (
	IdleStop  = "stop"
	IdlePause = "pause"
)

// IdleSettings are the idle fields of a create.
type IdleSettings struct {
	IdleTimeoutSeconds int    `json:"idle_timeout_seconds,omitempty" doc:"stop (or pause, idle_action) the container once its agent reports it idle for this many seconds: no running process, terminal, MCP session, WebSocket, request through its gateway or keep-alive lease in that time; 0 or absent: never, else 5-604800"`
	IdleAction         string `json:"idle_action,omitempty" doc:"what an idle timeout does: stop (default) or pause"`
}

// Validate checks the timeout's range and the action.
func (in *IdleSettings) Validate() error {
	return validIdle(&in.IdleTimeoutSeconds, &in.IdleAction)
}

func (in *IdleSettings) idleAction() string {
	if in.IdleAction == "" && in.IdleTimeoutSeconds != 0 {
		return IdleStop
	}
	return in.IdleAction
}

// validIdleChanges checks the idle fields a PATCH gives.
func validIdleChanges(timeout *int, act *string) error {
	var secs int
	var action string
	if timeout != nil {
		secs = *timeout
	}
	if act != nil {
		action = *act
		if action == "" {
			return fault.Invalid("idle_action", "must be stop or pause, got an empty string")
		}
	}
	return validIdle(&secs, &action)
}

func validIdle(secs *int, action *string) error {
	if s := *secs; s != 0 && (s < minIdleTimeout || s > maxIdleTimeout) {
		return fault.Invalid("idle_timeout_seconds", "must be 0 (off) or between %d and %d seconds, got %d", minIdleTimeout, maxIdleTimeout, s)
	}
	switch *action {
	case "", IdleStop, IdlePause:
	default:
		return fault.Invalid("idle_action", "must be stop or pause, got %q", *action)
	}
	return nil
}

// applyIdle changes c's idle settings to those given (in a PATCH's transaction),
// writing container.resource_updated when they change.
func applyIdle(ev func(string, map[string]any) error, c *Container, timeout *int, act *string) error {
	secs, action := c.IdleTimeoutSeconds, c.IdleAction
	if timeout != nil {
		secs = *timeout
	}
	if act != nil {
		action = *act
	}
	if action == "" && secs != 0 {
		action = IdleStop
	}
	if secs == c.IdleTimeoutSeconds && action == c.IdleAction {
		return nil
	}
	if err := ev("container.resource_updated", map[string]any{"idle_timeout_seconds": secs, "idle_action": action}); err != nil {
		return err
	}
	c.IdleTimeoutSeconds, c.IdleAction = secs, action
	return nil
}

// ActivityReport is what a container's agent reports of its activity.
type ActivityReport struct {
	Busy bool `json:"busy" doc:"something is going on now: a running process, an open terminal, MCP session or WebSocket, a request in flight, a keep-alive lease"`
	// IdleSeconds is relative, not a time: the agent's clock need not
	// agree with the control plane's.
	IdleSeconds float64        `json:"idle_seconds" doc:"seconds since the last activity ended (0 while busy)"`
	Activity    map[string]int `json:"activity,omitempty" doc:"what keeps it busy, by kind (process, terminal, mcp_session, request, websocket, lease ...) with a count"`
}

// Validate bounds what the agent may say.
func (in *ActivityReport) Validate() error {
	if math.IsNaN(in.IdleSeconds) || in.IdleSeconds < 0 || in.IdleSeconds > 10*365*24*3600 {
		return fault.Invalid("idle_seconds", "must be a number of seconds, 0 or more")
	}
	if len(in.Activity) > 64 {
		return fault.Invalid("activity", "at most 64 kinds")
	}
	return nil
}

// ActivityReportRequest is POST /api/v1/containers/{id}/activity.
type ActivityReportRequest struct {
	ContainerRef
	Body ActivityReport
}

// ActivityAnswer tells the agent the settings and when to report next.
type ActivityAnswer struct {
	IdleTimeoutSeconds int     `json:"idle_timeout_seconds" doc:"the container's idle timeout (0: off)"`
	IdleAction         string  `json:"idle_action,omitempty" doc:"stop or pause"`
	ReportInSeconds    float64 `json:"report_in_seconds" doc:"when to report again: the moment its idle time would reach the timeout, at most 30 s"`
	// Acting says the report completed the timeout: the container is
	// being stopped or paused.
	Acting bool `json:"acting,omitempty" doc:"the report completed the idle timeout: the container is being stopped or paused"`
}

// ReportActivity takes the agent's report: when it has been idle for
// the whole timeout, the container is stopped or paused (in the
// background: the stop ends the agent that reports).
func (s *Service) ReportActivity(ctx context.Context, in ActivityReportRequest) (*ActivityAnswer, error) {
	if err := in.Body.Validate(); err != nil {
		return nil, err
	}
	now := s.now()
	c, err := s.current(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	out := &ActivityAnswer{IdleTimeoutSeconds: c.IdleTimeoutSeconds, IdleAction: c.IdleAction, ReportInSeconds: maxReportIn.Seconds()}
	timeout := time.Duration(c.IdleTimeoutSeconds) * time.Second
	if timeout <= 0 {
		return out, nil
	}
	idle := time.Duration(0)
	if !in.Body.Busy {
		idle = time.Duration(in.Body.IdleSeconds * float64(time.Second))
		if c.RunningSince != nil {
			idle = min(idle, now.Sub(*c.RunningSince))
		}
	}
	if c.Status == StatusRunning && !in.Body.Busy && idle >= timeout && s.lc.rt.Driver != nil && c.ImageName != "" {
		out.Acting, out.ReportInSeconds = true, maxReportIn.Seconds()
		id, action := c.ID, c.IdleAction
		s.background(id, func(ctx context.Context) { s.idleAct(ctx, id, action, idle) })
		return out, nil
	}
	out.ReportInSeconds = min(max(timeout-max(idle, 0), minReportIn), maxReportIn).Seconds()
	return out, nil
}

// idleAct stops or pauses container id for having been idle for idle,
// if it still runs with an idle timeout; its event's reason says why.
func (s *Service) idleAct(ctx context.Context, id, action string, idle time.Duration) {
	unlock := s.lc.lock(id)
	defer unlock()
	c, err := s.loadContainer(ctx, id)
	if err != nil || c == nil || c.Status != StatusRunning || c.IdleTimeoutSeconds == 0 {
		return
	}
	drv, err := s.engineFor(c)
	if err != nil {
		return
	}
	reason := fmt.Sprintf("idle: its agent reported no running process, terminal, MCP session, WebSocket, request or keep-alive lease "+
		"for %.1fs (idle_timeout_seconds %d, idle_action %s)", idle.Seconds(), c.IdleTimeoutSeconds, action)
	status := StatusStopped
	if action == IdlePause && drv.Capabilities().Pause {
		status = StatusPaused
		// The freezer gives up on a process it cannot freeze at once
		// (one in uninterruptible I/O on a loaded disk): try again
		// before waiting for the next report.
		for try := 0; ; try++ {
			if err = drv.Pause(ctx, id); err == nil || errors.Is(err, runtime.ErrNotFound) || try == 2 || !sleepCtx(ctx, 200*time.Millisecond) {
				break
			}
		}
	} else {
		err = drv.Stop(ctx, id, stopGrace)
	}
	if errors.Is(err, runtime.ErrNotFound) {
		status, reason = StatusFailed, removedReason
	} else if err != nil {
		s.log.Warn("container: idle "+action+" failed", "container", id, "err", err)
		return
	}
	if _, err := s.move(ctx, id, []string{StatusRunning}, status, reason, func(c *Container) {
		if status != StatusPaused {
			c.AgentAddr = ""
		}
	}); err != nil {
		s.log.Warn("container: recording the idle "+action, "container", id, "err", err)
		return
	}
	s.log.Info("container idle", "container", id, "action", action, "idle", idle.Round(time.Millisecond))
}

// idleDesc is the idle settings' part of the create's and PATCH's
// descriptions.
const idleDesc = " `idle_timeout_seconds` (0: off, else 5-604800; 400 `idle_timeout_seconds` outside) and `idle_action` (`stop`, the " +
	"default, or `pause`; 400 `idle_action` otherwise): the container is stopped or paused once its agent has reported it idle " +
	"for the whole timeout, counted from its last start or resume at the latest. Idle means no running process (process service, " +
	"a scheduled exec or cron run), no open terminal, MCP session or WebSocket, no request through its gateway and no keep-alive lease " +
	"(`POST /api/v1/agent/leases` on the agent, `deckhand keepalive`). The action writes `container.stopped` or " +
	"`container.paused` with a `reason` that says it was idle; a change of the settings writes `container.resource_updated` and " +
	"reaches the agent within 30 s."

// ActivityPath is where a container's agent reports its activity.
const ActivityPath = "/api/v1/containers/{id}/activity"

// idleRoutes is the agent's activity report.
func (s *Service) idleRoutes(agent platform.Policy) []platform.Route {
	return []platform.Route{
		{Method: http.MethodPost, Path: ActivityPath, OperationID: "reportContainerActivity", Policy: agent, Tags: []string{"containers"},
			Summary: "The agent reports its activity (idle stop)",
			Description: "The container's agent reports whether anything is going on (`busy`: a running process, an open terminal, " +
				"MCP session or WebSocket, a request in flight, a keep-alive lease) and for how long nothing has been (`idle_seconds`). " +
				"When the container runs with `idle_timeout_seconds` and the report says it was idle for the whole timeout (counted " +
				"from its last start or resume at the latest), the control plane stops or pauses it (`idle_action`) and writes " +
				"`container.stopped` or `container.paused` with a reason that says it was idle; `acting` is then true. The answer " +
				"tells the agent when to report next (`report_in_seconds`): the moment its idle time would reach the timeout, at most " +
				"30 s, so a change of the settings reaches it within that time. 400 for a malformed report; 404 for an unknown " +
				"container; 403 for anyone but the container's own agent token.",
			Message: "Activity recorded", Op: platform.Op(s.ReportActivity)},
	}
}
