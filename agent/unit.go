package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"deckhand/agent/gateway"
	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/proc"
	"deckhand/services/journal"
)

// Service states reported by `deckhand status`.
const (
	StateStarting    = "starting"    // launched, /health not answered yet
	StateRunning     = "running"     // /health answers ok
	StateUnavailable = "unavailable" // up, but its /health says it cannot work (no display)
	StateBackoff     = "backoff"     // crashed, waiting to restart
	StateStopped     = "stopped"     // the agent is stopping
)

// How a service runs.
const (
	ModeInProcess = "in-process"
	ModeChild     = "child"
)

// unit supervises one service.
type unit struct {
	name    string
	entry   Entry
	sup     *Supervisor
	addr    string
	mode    string
	argv    []string     // child command
	build   Constructor  // in-process
	ln      net.Listener // in-process: the listener bound at New, used by the first start
	backoff Backoff
	log     *slog.Logger

	ready     chan struct{} // closed the first time /health answers
	readyOnce sync.Once

	mu       sync.Mutex
	state    string
	pid      int
	since    time.Time // start of the current run
	restarts int
	lastErr  string
	gen      int                  // incremented on every start, so a stale prober stops
	cur      net.Listener         // live listener of the current in-process run
	deps     contract.ServiceDeps // in-process: its data, store open while the unit lives

	// direct is the handler of the serving in-process host, for the
	// gateway's direct dispatch (nil while none serves, and for a child).
	direct atomic.Pointer[gateway.InProcess]
	// activity is the serving in-process service when it reports its
	// activity (idle.go); nil otherwise.
	activity atomic.Pointer[contract.ActivityReporter]
}

func (u *unit) setState(state string) {
	u.mu.Lock()
	u.state = state
	u.mu.Unlock()
}

func (u *unit) begin(pid int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.gen++
	u.state, u.pid, u.since = StateStarting, pid, time.Now()
	return u.gen
}

// crashed records why the current run ended, tells the seams, and returns
// the restart delay.
func (u *unit) crashed(err error) time.Duration {
	u.mu.Lock()
	up := time.Since(u.since)
	u.gen++
	pid := u.pid
	u.state, u.pid = StateBackoff, 0
	if err == nil {
		err = errors.New("stopped serving")
	}
	u.lastErr = err.Error()
	d := u.backoff.Next(up)
	restarts := u.restarts
	u.mu.Unlock()
	u.log.Error("service crashed; restarting", "err", err, "uptime_ms", up.Milliseconds(), "restart_in_ms", d.Milliseconds())
	now := time.Now().UTC()
	fields := map[string]any{"service": u.name, "mode": u.mode, "pid": pid, "error": err.Error(),
		"uptime_ms": up.Milliseconds(), "restart_in_ms": d.Milliseconds(), "restarts": restarts}
	u.sup.cfg.Journal.Record(contract.JournalEntry{Time: now, Source: "agent", Level: "error",
		Message: "service " + u.name + " crashed; restarting", Fields: fields})
	u.sup.cfg.Notifier.Notify(contract.Event{Time: now, Kind: contract.EventServiceCrashed, Source: "agent", Level: "error",
		Title: "Service " + u.name + " crashed", Body: err.Error(), Data: fields})
	return d
}

func (u *unit) restarted() {
	u.mu.Lock()
	u.restarts++
	n := u.restarts
	u.mu.Unlock()
	u.sup.cfg.Journal.Record(contract.JournalEntry{Time: time.Now().UTC(), Source: "agent", Level: "info",
		Message: "service " + u.name + " restarting", Fields: map[string]any{"service": u.name, "restarts": n}})
}

// run supervises the service until ctx ends.
func (u *unit) run(ctx context.Context) {
	if u.mode == ModeChild {
		// Pdeathsig belongs to the thread that forked the child.
		runtime.LockOSThread()
	}
	var svc contract.ContainerService
	defer func() {
		// Sessions, processes and files an in-process service holds go
		// with it, whether it was serving or waiting to restart.
		if c, ok := svc.(contract.Closer); ok {
			if err := c.Close(); err != nil {
				u.log.Warn("close", "err", err)
			}
		}
		if u.deps.Store != nil {
			_ = u.deps.Store.Close()
		}
		u.setState(StateStopped)
	}()
	for {
		var err error
		if u.mode == ModeChild {
			err = u.runChild(ctx)
		} else {
			svc, err = u.runInProcess(ctx, svc)
		}
		if ctx.Err() != nil {
			return
		}
		delay := u.crashed(err)
		select {
		case <-time.After(delay):
			u.restarted()
		case <-ctx.Done():
			return
		}
	}
}

// runInProcess builds the service once, then serves it on a fresh Host until
// the host fails or ctx ends.
func (u *unit) runInProcess(ctx context.Context, svc contract.ContainerService) (contract.ContainerService, error) {
	ln := u.ln
	u.ln = nil
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", u.addr); err != nil {
			return svc, fmt.Errorf("listen %s: %w", u.addr, err)
		}
	}
	deps, err := u.depsOnce()
	if err == nil && svc == nil {
		svc, err = u.build(deps, u.sup.cfg.Settings.Of(u.name))
	}
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("build service: %w", err)
	}
	host, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		_ = ln.Close()
		return svc, err
	}
	gen := u.begin(os.Getpid())
	u.setListener(ln)
	// Other services' tool calls reach this host in memory while it serves.
	u.sup.peers.Serve(u.name, host)
	defer u.sup.peers.Stop(u.name, host)
	// The gateway calls this host's handler itself while it serves; when
	// it stops (a crash, the agent stopping) the gateway falls back to the
	// proxy, which answers 502 until the next run serves again.
	u.direct.Store(gateway.NewInProcess(host.App(), ln.Addr()))
	if ar, ok := svc.(contract.ActivityReporter); ok {
		u.activity.Store(&ar)
		defer u.activity.Store(nil)
	}
	defer u.direct.Store(nil)
	go u.watchHealth(ctx, gen)
	return svc, platform.ServeUntil(ctx, host, ln, serviceGrace)
}

// depsOnce opens the service's data the first time; later runs of the
// same unit reuse the open store.
func (u *unit) depsOnce() (contract.ServiceDeps, error) {
	if u.deps.Store != nil {
		return u.deps, nil
	}
	d, err := u.sup.deps(u.name)
	if err == nil {
		u.deps = d
	}
	return d, err
}

// setListener remembers the live listener of an in-process run (the
// supervisor's tests close it to make the host fail).
func (u *unit) setListener(ln net.Listener) {
	u.mu.Lock()
	u.cur = ln
	u.mu.Unlock()
}

// runChild starts the child and waits for it to exit or for ctx to end.
func (u *unit) runChild(ctx context.Context) error {
	cmd := exec.Command(u.argv[0], u.argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	env := append(append(u.sup.cfg.Settings.Env(), u.sup.notifyEnv()...), "DECKHAND_LOG_LEVEL="+u.sup.cfg.LogLevel)
	if u.sup.sink != nil {
		env = append(env, journalSocketEnv+"="+journal.SocketPath(u.sup.cfg.Data))
	}
	cmd.Env = childEnv(env)
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", strings.Join(u.argv, " "), err)
	}
	pid := cmd.Process.Pid
	gen := u.begin(pid)
	u.log.Info("child started", "pid", pid, "command", strings.Join(u.argv, " "))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	go u.watchHealth(ctx, gen)
	select {
	case err := <-done:
		// Whatever the child left in its group goes with it.
		_ = proc.KillGroup(pid, syscall.SIGKILL)
		if err == nil {
			err = errors.New("exited")
		}
		return fmt.Errorf("child %d: %w", pid, err)
	case <-ctx.Done():
		warn := time.AfterFunc(serviceGrace, func() { u.log.Warn("child ignored SIGTERM; killing", "pid", pid) })
		proc.StopTree(pid, syscall.SIGTERM, serviceGrace, done)
		warn.Stop()
		return nil
	}
}

// childEnv is the agent's environment minus what belongs to the agent alone
// (systemd's notify socket and watchdog), with set replacing any variable of
// the same name: the child's settings are the agent's, whatever the agent
// itself inherited. The log level travels as DECKHAND_LOG_LEVEL.
func childEnv(set []string) []string {
	over := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		over[k] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if over[k] || k == "NOTIFY_SOCKET" || strings.HasPrefix(k, "WATCHDOG_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, set...)
}

// watchHealth polls /health of the current run until it answers, then marks
// the unit running (or unavailable) and, the first time, ready.
func (u *unit) watchHealth(ctx context.Context, gen int) {
	start := time.Now()
	for {
		u.mu.Lock()
		stale := u.gen != gen
		u.mu.Unlock()
		if stale || ctx.Err() != nil {
			return
		}
		if h, err := u.sup.fetchHealth(ctx, u.addr); err == nil {
			u.mu.Lock()
			if u.gen == gen {
				u.state = healthState(h)
			}
			u.mu.Unlock()
			u.readyOnce.Do(func() { close(u.ready) })
			return
		}
		// Poll tightly while a service normally comes up (cold start is
		// measured to the first healthy answer), then ease off.
		delay := 3 * time.Millisecond
		if time.Since(start) > time.Second {
			delay = 50 * time.Millisecond
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
	}
}

// observe folds a fresh health record of the run with pid into the unit's
// state and returns the state.
func (u *unit) observe(h *platform.Health, pid int) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pid == pid && (u.state == StateRunning || u.state == StateUnavailable) {
		u.state = healthState(h)
	}
	return u.state
}

// healthState is the state a health record tells.
func healthState(h *platform.Health) string {
	if h.Status != "ok" {
		return StateUnavailable
	}
	return StateRunning
}

// fetchHealth asks a service for its health record. No User-Agent is sent,
// so the agent's probes do not overwrite the service's last client.
func (s *Supervisor) fetchHealth(ctx context.Context, addr string) (*platform.Health, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return nil, err
	}
	req.Header["User-Agent"] = []string{""}
	resp, err := s.probe.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("/health answered %d", resp.StatusCode)
	}
	var h platform.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return nil, fmt.Errorf("/health: %w", err)
	}
	return &h, nil
}
