package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"deckhand/agent/access"
	"deckhand/agent/gateway"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// The agent's side of the control plane's idle stop. The agent alone
// knows whether anything goes on in the container: the in-process
// services that report Activity (running processes, attached
// terminals, MCP sessions), the gateway's requests and upgraded
// connections, and keep-alive leases (POST /api/v1/agent/leases, taken
// by `deckhand keepalive` or a tool before a long quiet step). It
// reports busy or idle-for-how-long to the control plane, which answers
// when to report next: the moment the idle time would reach the
// container's timeout. So the decision is taken on a report made at that
// moment.

// Lease limits.
const (
	maxLeases      = 256
	maxLeaseSecs   = 24 * 3600
	leaseBodyLimit = 4 << 10
	// activityRetry is the wait after a report that was not answered.
	activityRetry = 10 * time.Second
	// activityLook is how often the agent looks whether it turned
	// busy or idle, and whether a report is due.
	activityLook = 100 * time.Millisecond
	// activityMaxWait bounds the control plane's report_in_seconds.
	activityMaxWait = 5 * time.Minute
)

// Lease is one keep-alive lease.
type Lease struct {
	ID              string    `json:"id"`
	DurationSeconds int       `json:"duration_seconds"`
	CreatedAt       time.Time `json:"created_at"`
	ExpiresAt       time.Time `json:"expires_at"`
}

// idleState is what the agent knows of its activity.
type idleState struct {
	started time.Time
	gw      func() (inflight, tunnels int, last time.Time)
	svcs    func() []contract.ActivityReporter

	mu     sync.Mutex
	leases map[string]Lease
	// leaseEnd is when the last expired lease ended: its entry goes at
	// the first report after, and idleness still counts from it.
	leaseEnd time.Time
}

func newIdleState(gw func() (int, int, time.Time), svcs func() []contract.ActivityReporter) *idleState {
	return &idleState{started: time.Now(), gw: gw, svcs: svcs, leases: map[string]Lease{}}
}

// ActivityReport is what the agent reports (control/projects
// ActivityReport).
type ActivityReport struct {
	Busy        bool           `json:"busy"`
	IdleSeconds float64        `json:"idle_seconds"`
	Activity    map[string]int `json:"activity,omitempty"`
}

// report is the agent's activity now.
func (s *idleState) report(now time.Time) ActivityReport {
	busy := map[string]int{}
	last := s.started
	later := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	inflight, tunnels, gwLast := s.gw()
	later(gwLast)
	if inflight > 0 {
		busy["request"] = inflight
	}
	if tunnels > 0 {
		busy["websocket"] = tunnels
	}
	for _, r := range s.svcs() {
		a := r.Activity()
		later(a.Last)
		for k, n := range a.Busy {
			if n > 0 {
				busy[k] += n
			}
		}
	}
	s.mu.Lock()
	for id, l := range s.leases {
		if now.Before(l.ExpiresAt) {
			busy["lease"]++
			continue
		}
		if l.ExpiresAt.After(s.leaseEnd) {
			s.leaseEnd = l.ExpiresAt
		}
		delete(s.leases, id)
	}
	later(s.leaseEnd)
	s.mu.Unlock()
	r := ActivityReport{Busy: len(busy) > 0}
	if r.Busy {
		r.Activity = busy
	} else if idle := now.Sub(last); idle > 0 {
		r.IdleSeconds = idle.Seconds()
	}
	return r
}

// leaseInput is POST /api/v1/agent/leases.
type leaseInput struct {
	DurationSeconds *int `json:"duration_seconds"`
}

// serveLeases answers the leases route (the gateway has authorized the
// caller): POST takes a lease, GET lists those in force, DELETE
// .../{id} ends one early.
func (s *idleState) serveLeases(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	id := strings.TrimPrefix(strings.TrimPrefix(path, gateway.LeasesPath), "/")
	now := time.Now()
	switch {
	case id == "" && ctx.IsPost():
		var in leaseInput
		dec := json.NewDecoder(strings.NewReader(string(ctx.PostBody())))
		dec.DisallowUnknownFields()
		if len(ctx.PostBody()) > leaseBodyLimit {
			reqpolicy.WriteFastError(ctx, 0, fault.Invalid("body", "at most %d bytes", leaseBodyLimit))
			return
		}
		if err := dec.Decode(&in); err != nil {
			reqpolicy.WriteFastError(ctx, 0, fault.Invalid("body", "must be a JSON object {\"duration_seconds\": N}: %s", err.Error()))
			return
		}
		if in.DurationSeconds == nil {
			reqpolicy.WriteFastError(ctx, 0, fault.Invalid("duration_seconds", "is required: how long the container counts as busy, 1-%d seconds", maxLeaseSecs))
			return
		}
		d := *in.DurationSeconds
		if d < 1 || d > maxLeaseSecs {
			reqpolicy.WriteFastError(ctx, 0, fault.Invalid("duration_seconds", "must be between 1 and %d seconds, got %d", maxLeaseSecs, d))
			return
		}
		l := Lease{ID: "lse_" + strings.ToLower(rand.Text()[:16]), DurationSeconds: d, CreatedAt: now.UTC(),
			ExpiresAt: now.Add(time.Duration(d) * time.Second).UTC()}
		s.mu.Lock()
		if len(s.leases) >= maxLeases {
			s.mu.Unlock()
			reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeConflict, Details: "leases",
				Message: "at most 256 keep-alive leases at once: end one (DELETE) or take a longer one"})
			return
		}
		s.leases[l.ID] = l
		s.mu.Unlock()
		writeJSON(ctx, http.StatusCreated, l)
	case id == "" && (ctx.IsGet() || ctx.IsHead()):
		s.mu.Lock()
		out := make([]Lease, 0, len(s.leases))
		for _, l := range s.leases {
			if now.Before(l.ExpiresAt) {
				out = append(out, l)
			}
		}
		s.mu.Unlock()
		sort.Slice(out, func(i, j int) bool { return out[i].ExpiresAt.Before(out[j].ExpiresAt) })
		writeJSON(ctx, http.StatusOK, map[string]any{"leases": out})
	case id != "" && !strings.Contains(id, "/") && ctx.IsDelete():
		s.mu.Lock()
		_, ok := s.leases[id]
		delete(s.leases, id)
		s.mu.Unlock()
		if !ok {
			reqpolicy.WriteFastError(ctx, 0, fault.NotFound("lease", id))
			return
		}
		ctx.SetStatusCode(http.StatusNoContent)
	case id != "" && strings.Contains(id, "/"):
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeNotFound, Message: "no such route", Details: "leases"})
	default:
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeMethodNotAllowed, Message: "method not allowed on this route", Details: "leases"})
	}
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	raw, _ := json.Marshal(v)
	ctx.SetContentType("application/json")
	ctx.SetStatusCode(status)
	ctx.SetBody(raw)
}

// activityAnswer is the part of the control plane's answer the agent
// reads.
type activityAnswer struct {
	ReportInSeconds float64 `json:"report_in_seconds"`
}

// activityPath is the control plane's route of the report
// (control/projects ActivityPath).
func activityPath(container string) string {
	return "/api/v1/containers/" + url.PathEscape(container) + "/activity"
}

// reportActivity reports the agent's activity until ctx ends: when the
// control plane's last answer said, and at once when the agent turns
// from busy to idle or back (looked at every activityLook, at most once
// a second, a request alone not counting as a turn: its end is in the
// idle time anyway), so a change of the settings made while it was busy
// counts from the moment it ends.
func (s *Supervisor) reportActivity(ctx context.Context, control *access.Control) {
	next := time.Now()
	var lastSent time.Time
	lastBusy := false
	for {
		t := time.NewTimer(min(activityLook, max(time.Until(next), 0)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := time.Now()
		r := s.idle.report(now)
		busy := len(r.Activity) > 1 || (r.Busy && r.Activity["request"] == 0)
		if now.Before(next) && (busy == lastBusy || now.Sub(lastSent) < time.Second) {
			continue
		}
		lastBusy, lastSent = busy, now
		next = now.Add(activityRetry)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		status, body, err := control.Post(rctx, activityPath(s.cfg.ContainerID), r, 64<<10)
		cancel()
		if err != nil || status/100 != 2 {
			if ctx.Err() == nil {
				s.log.Debug("activity report not taken", "status", status, "err", err)
			}
			continue
		}
		var ans activityAnswer
		if data, err := access.Data(body); err == nil && json.Unmarshal(data, &ans) == nil && ans.ReportInSeconds > 0 {
			// From when the report was made: the answer's way back is
			// not added to the wait.
			next = now.Add(min(time.Duration(ans.ReportInSeconds*float64(time.Second)), activityMaxWait))
		}
	}
}

// activityReporters are the serving in-process services that report
// their activity.
func (s *Supervisor) activityReporters() []contract.ActivityReporter {
	var out []contract.ActivityReporter
	for _, u := range s.units {
		if ar := u.activity.Load(); ar != nil {
			out = append(out, *ar)
		}
	}
	return out
}
