package projects

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/runtime"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// The lifecycle of a container that runs. The store holds what a user
// asked (the record, its status and reason); the engine holds what runs;
// this file moves the record by what the runtime driver reports:
//
//	creating --agent enrolled and healthy--> running
//	creating --image missing, engine unreachable, no enrolment--> failed
//	running  --stop--> stopped --start--> running (after a health check)
//	any      --DELETE--> deleting --engine objects gone--> (no record)
//
// Every change of status writes its event (container.<status>) in the
// transaction that writes the status. A container is enrolled when its
// agent first authenticates with the agt_ token minted for it; it is
// running once the control plane has also reached the agent's gateway
// (GET /_agent/health at the address the driver reports).

// Container statuses (the interface's lifecycle event kinds name them).
const (
	StatusCreating = "creating"
	StatusRunning  = "running"
	StatusPaused   = "paused"
	StatusStopped  = "stopped"
	StatusFailed   = "failed"
	StatusDeleting = "deleting"
)

// RuntimeNone is the runtime of a control plane that runs no containers:
// records only, agents run by hand.
const RuntimeNone = "none"

// Paths inside a container the runtime writes before it starts.
const (
	agentTokenPath = "/run/deckhand/agent-token"
	controlKeyPath = "/run/deckhand/control-key.json"
	// agentData is the agent's state directory in the images.
	agentData = "/var/lib/deckhand"
	// AgentPort is where the agent's gateway listens in a container; the
	// driver reports it on the container's address.
	AgentPort = 7700
)

// Runtime is how the projects domain runs containers (Config.Runtime).
type Runtime struct {
	// Driver is the engine; nil runs nothing (--runtime none).
	Driver runtime.Driver
	// Servers, when set, places containers on servers with endpoints;
	// Driver then routes to them (servers.go).
	Servers Servers
	// AgentControlURL answers the control-plane URL the agents are given
	// (the server may open a listener for them on first use).
	AgentControlURL func(ctx context.Context) (string, error)
	// EnrollTimeout bounds create → running: past it the container is
	// failed, with the reason (default 60 s).
	EnrollTimeout time.Duration
	// MaxPerProject caps a project's containers (0: no cap).
	MaxPerProject int
	// MaxSnapshots caps a project's snapshots (0: no cap).
	MaxSnapshots int
	// ContainerDomain and ServerName make the services' URLs:
	// https://<project>-<container>-<service>-1.<server>.<domain>.
	ContainerDomain, ServerName string
	// Services are the agent's service names the URLs are made for.
	Services []string
	// URLScheme and URLPort are how the platform proxy is reached
	// ("https" and none by default; "http" and its port for a plain
	// proxy on loopback, as make run has).
	URLScheme, URLPort string
	// HealthClient reaches agents' gateways (default: 2 s timeout, no
	// proxy).
	HealthClient *http.Client
	// ReconcileEvery is the period of the full reconcile beside the
	// engine's event stream (default 30 s).
	ReconcileEvery time.Duration
}

// Resources are a container's limits (0: the engine's default).
type Resources struct {
	CPUs     float64 `json:"cpus,omitempty" doc:"CPU cores, 0.1-64 in steps of 0.01"`
	MemoryMB int64   `json:"memory_mb,omitempty" doc:"memory limit in MiB, 128-262144"`
}

// Limits of a create.
const (
	minCPUs, maxCPUs   = 0.1, 64
	minMemMB, maxMemMB = 128, 262144
	maxEnv             = 64
	maxEnvValue        = 4096
)

var envKeyRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Validate checks each limit's range.
func (r *Resources) Validate() error {
	if r == nil {
		return nil
	}
	if r.CPUs != 0 && (r.CPUs < minCPUs || r.CPUs > maxCPUs || math.Abs(r.CPUs*100-math.Round(r.CPUs*100)) > 1e-6) {
		return fault.Invalid("resources.cpus", "must be between %g and %g cores in steps of 0.01, got %g", minCPUs, float64(maxCPUs), r.CPUs)
	}
	if r.MemoryMB != 0 && (r.MemoryMB < minMemMB || r.MemoryMB > maxMemMB) {
		return fault.Invalid("resources.memory_mb", "must be between %d and %d MiB, got %d", minMemMB, maxMemMB, r.MemoryMB)
	}
	return nil
}

// ContainerCreate is the body of POST /api/v1/containers.
type ContainerCreate struct {
	ProjectID string            `json:"project_id" required:"true" doc:"the project: its owner, a manager or an admin may create"`
	Name      string            `json:"name" required:"true" doc:"1-100 characters, unique in the project"`
	ImageID   string            `json:"image_id,omitempty" doc:"a catalog image (img_...): free, or priced and in the caller's library; required unless snapshot_id is given"`
	Resources *Resources        `json:"resources,omitempty" doc:"CPU and memory limits; absent: the engine's defaults"`
	Autostart bool              `json:"autostart,omitempty" doc:"start again with the engine (and after it exits on its own)"`
	Env       map[string]string `json:"env,omitempty" doc:"environment of the container's programs: at most 64 names (letters, digits, '_', not starting with a digit or DECKHAND_), values up to 4096 bytes"`
	// SnapshotID, Count and WorkspaceID: see fork.go.
	SnapshotID  string `json:"snapshot_id,omitempty" doc:"make the container from this snapshot of a container of the project (its files, packages and workspace as they were); image_id may then be left out"`
	Count       *int   `json:"count,omitempty" doc:"make this many containers, 1-10, named <name>-1 ... <name>-<count>; the answer is then an array of them"`
	WorkspaceID string `json:"workspace_id,omitempty" doc:"mount this kept workspace of the project as the home (GET /api/v1/projects/{id}/workspaces); not with count above 1"`
	IdleSettings
}

// Validate checks every field but the image (the catalog's) and the
// project (the store's).
func (in *ContainerCreate) Validate() error {
	if err := validID("project_id", in.ProjectID); err != nil {
		return err
	}
	if err := cleanName("name", &in.Name); err != nil {
		return err
	}
	if err := in.validateFork(); err != nil {
		return err
	}
	if err := in.Resources.Validate(); err != nil {
		return err
	}
	if err := in.IdleSettings.Validate(); err != nil {
		return err
	}
	return validEnv(in.Env)
}

func validEnv(env map[string]string) error {
	if len(env) > maxEnv {
		return fault.Invalid("env", "at most %d variables, got %d", maxEnv, len(env))
	}
	for k, v := range env {
		if !envKeyRe.MatchString(k) {
			return fault.Invalid("env", "%q is not a variable name: letters, digits and '_', not starting with a digit, at most 128", k)
		}
		// The agent reads DECKHAND_<FLAG> as its flags: a user's variable
		// must not reconfigure it.
		if strings.HasPrefix(strings.ToUpper(k), "DECKHAND_") {
			return fault.Invalid("env", "%s: names starting with DECKHAND_ are the agent's own", k)
		}
		if len(v) > maxEnvValue || strings.IndexByte(v, 0) >= 0 {
			return fault.Invalid("env", "%s: a value is at most %d bytes without NUL", k, maxEnvValue)
		}
	}
	return nil
}

// lifecycle is the runtime side of the domain: the per-container locks,
// the provisioning in flight and the enrolments seen.
type lifecycle struct {
	rt       Runtime
	ctx      context.Context // ends at Close: provisioning and the reconciler stop
	stop     context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	locks    map[string]*sync.Mutex
	inflight map[string]bool
	// start starts the reconcilers once (Bootstrap).
	start     sync.Once
	enrolled  sync.Map          // agent token id → struct{}: its enrolment is stored
	enrolling sync.Map          // container id → time.Time: its agent's latest enrolment this process saw
	signals   signals           // wake the waits on a container (lifecycle_wait.go)
	minted    map[string]string // container id → the agent token its create minted, for provision
}

func newLifecycle(rt Runtime) *lifecycle {
	if rt.EnrollTimeout <= 0 {
		rt.EnrollTimeout = 60 * time.Second
	}
	if rt.ReconcileEvery <= 0 {
		rt.ReconcileEvery = 30 * time.Second
	}
	if rt.ServerName == "" {
		rt.ServerName = "local"
	}
	if rt.ContainerDomain == "" {
		rt.ContainerDomain = "localhost"
	}
	if rt.HealthClient == nil {
		rt.HealthClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	}
	ctx, stop := context.WithCancel(context.Background())
	return &lifecycle{rt: rt, ctx: ctx, stop: stop, locks: map[string]*sync.Mutex{}, inflight: map[string]bool{}, minted: map[string]string{}}
}

// lock serializes what acts on one container (API actions, provisioning
// steps, the reconciler).
func (l *lifecycle) lock(id string) func() {
	l.mu.Lock()
	m := l.locks[id]
	if m == nil {
		m = &sync.Mutex{}
		l.locks[id] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// runtimeName is the answer's `runtime`: that of the engine of c's
// server.
func (s *Service) runtimeName(c *Container) string {
	if s.lc.rt.Driver == nil {
		return RuntimeNone
	}
	return s.serverEngine(c).Capabilities().Name
}

const recordsOnly = "records only: this control plane runs no containers (--runtime none); run the container's agent yourself " +
	"with an agent token (POST /api/v1/containers/{id}/agent-tokens)"

// decorate fills what an answer shows beside the record: the runtime, the
// services' URLs and, under --runtime none, the reason nothing runs.
// It answers a copy: the record stays as stored.
func (s *Service) decorate(rec *Container) *Container {
	c := *rec
	c.Runtime = s.runtimeName(&c)
	if c.Runtime == RuntimeNone && c.StatusReason == "" {
		c.StatusReason = recordsOnly
	}
	c.URLs = map[string]string{}
	for _, svc := range s.lc.rt.Services {
		c.URLs[svc] = s.ServiceURL(&c, svc)
	}
	return &c
}

// ServiceURL is the URL of service svc of container c through the
// platform proxy (a port preview's service is p<port>).
func (s *Service) ServiceURL(c *Container, svc string) string {
	scheme, port := s.lc.rt.URLScheme, ""
	if scheme == "" {
		scheme = "https"
	}
	if p := s.lc.rt.URLPort; p != "" && !(scheme == "https" && p == "443") && !(scheme == "http" && p == "80") {
		port = ":" + p
	}
	return fmt.Sprintf("%s://%s-%s-%s-1.%s.%s%s", scheme, c.ProjectID, c.ID, svc, s.serverName(c), s.lc.rt.ContainerDomain, port)
}

// setStatus moves container c (read in tx) to status with reason and
// writes its event when the status changes; mutate, when given, changes
// the record too.
func (s *Service) setStatus(tx *store.Tx, ctx context.Context, c *Container, status, reason string) error {
	changed := c.Status != status
	c.Status, c.StatusReason, c.UpdatedAt = status, reason, s.now()
	if changed && status == StatusRunning {
		since := c.UpdatedAt
		c.RunningSince = &since
	}
	if err := tx.Put(bucketContainers, c.ID, c); err != nil {
		return err
	}
	if !changed {
		return nil
	}
	payload := map[string]any{"name": c.Name}
	if reason != "" {
		payload["reason"] = reason
	}
	return s.event(tx, ctx, events.Event{EventType: "container." + status, ResourceType: "container", ResourceID: c.ID,
		ProjectID: c.ProjectID, ContainerID: c.ID, Payload: events.Payload(payload)})
}

// move loads container id and, when its status is one of from (any when
// from is empty), sets status and reason in one transaction. It answers
// the record as written, or nil when the record is gone or in another
// status.
func (s *Service) move(ctx context.Context, id string, from []string, status, reason string, mutate func(*Container)) (*Container, error) {
	out, err := domain.Transact(ctx, s.db.UpdateContext, "record the container's status", func(tx *store.Tx) (*Container, error) {
		c, err := getContainer(tx, id)
		if err != nil || c == nil || (len(from) > 0 && !slices.Contains(from, c.Status)) {
			return nil, err
		}
		if mutate != nil {
			mutate(c)
		}
		return c, s.setStatus(tx, ctx, c, status, reason)
	})
	if err != nil {
		return nil, err
	}
	s.lc.signals.fire(id)
	return out, nil
}

// visibleProject is caller's level on project id (roleNone for an
// admin). A project the caller is no member of answers 404 naming
// project_id, as an unknown one: its existence is not the caller's to
// learn from a field.
func visibleProject(tx *store.Tx, id string, caller *auth.Principal) (level, error) {
	p, err := getProject(tx, id)
	lv := roleNone
	if err == nil && p != nil && !caller.IsAdmin() {
		lv, err = callerLevel(tx, p, caller.UserID)
	}
	if err == nil && (p == nil || (!caller.IsAdmin() && lv == roleNone)) {
		err = &fault.Error{Code: fault.CodeNotFound, Field: "project_id", Details: "project",
			Message: fmt.Sprintf("project_id: project %q not found", id)}
	}
	return lv, err
}

// creatable checks that the caller may create containers in project id:
// an admin, its owner or a manager.
func creatable(tx *store.Tx, id string, caller *auth.Principal) error {
	lv, err := visibleProject(tx, id, caller)
	if err == nil && !caller.IsAdmin() && lv < roleManager {
		err = &fault.Error{Code: fault.CodeForbidden, Field: "project_id", Details: "project_id",
			Message: "project_id: creating containers needs the project's owner or manager role (yours: " + roleName(lv) + ")"}
	}
	return err
}

// mintAgentToken replaces container id's agent tokens with a new one (in
// tx), for the agent the runtime is about to start: the token goes to the
// engine as a root-only file and is never shown. Enrolment starts over.
func (s *Service) mintAgentToken(tx *store.Tx, ctx context.Context, c *Container) (string, error) {
	token, err := s.putAgentToken(tx, c.ID, "runtime")
	if err != nil {
		return "", err
	}
	c.EnrolledAt = nil
	// An enrolment seen before this token is an earlier agent's.
	s.lc.enrolling.Delete(c.ID)
	return token, tx.Put(bucketContainers, c.ID, c)
}

// agentArgs are the agent's arguments in container c (the image's
// entrypoint is the agent).
func (s *Service) agentArgs(c *Container, controlURL string) []string {
	args := []string{"run", "--listen", fmt.Sprintf("0.0.0.0:%d", AgentPort), "--data", agentData,
		"--control-url", controlURL, "--control-key", controlKeyPath,
		"--container-id", c.ID, "--project-id", c.ProjectID, "--token-file", agentTokenPath,
		"--domain", s.lc.rt.ContainerDomain}
	if u, err := url.Parse(controlURL); err == nil && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		// The engine's bridge is not loopback; the key is pinned, so
		// nothing unsigned is applied.
		args = append(args, "--insecure-control-url")
	}
	return args
}

func loopbackHost(h string) bool {
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

// engineReason turns a driver error into a status_reason a person can act
// on.
func engineReason(err error, image string) string {
	switch {
	case errors.Is(err, runtime.ErrImageMissing):
		return fmt.Sprintf("image %s is not in the container engine: build it (make image) or load it, then start the container again", image)
	case errors.Is(err, runtime.ErrUnavailable):
		return "the container engine is unreachable (check that dockerd runs and --docker-host points at it): " + err.Error()
	}
	return "the container engine refused: " + err.Error()
}

// engineErr is an API answer for a driver error.
func engineErr(op string, err error) error {
	if errors.Is(err, runtime.ErrUnavailable) {
		return &fault.Error{Code: fault.CodeUnavailable, Message: "the container engine is unreachable while trying to " + op +
			": check that dockerd runs and --docker-host points at it", Headers: map[string]string{"Retry-After": "5"}, Cause: err}
	}
	return fault.Internal(op, err)
}

// dropAgentTokens deletes every agent token of container id (in tx); the
// keys are gathered first, as deleting under a scan may skip entries.
func dropAgentTokens(tx *store.Tx, id string) error {
	recs, err := store.Under[agentTokenRec](tx, bucketAgentTokens, id+"/")
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := tx.Delete(bucketAgentHash, r.Hash); err != nil {
			return err
		}
		if err := tx.Delete(bucketAgentTokens, id+"/"+r.ID); err != nil {
			return err
		}
	}
	return nil
}
