package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/proc"
)

// Program states (supervisord's, without its transient STOPPING).
const (
	StateStopped  = "stopped"  // not running: never started, or stopped on request
	StateStarting = "starting" // waiting for dependencies, or launched and not yet started/ready
	StateRunning  = "running"  // up for start_seconds, or its readiness probe passed
	StateBackoff  = "backoff"  // a start failed; waiting before the next attempt
	StateExited   = "exited"   // ended and not restarted by its policy
	StateFatal    = "fatal"    // start_retries failed starts in a row, or it could not start at all
)

// Status is a program's live state.
type Status struct {
	State         string     `json:"state" required:"true" enum:"stopped,starting,running,backoff,exited,fatal"`
	PID           int        `json:"pid,omitempty" doc:"of the running process (the leader of its process group)"`
	StartedAt     *time.Time `json:"started_at,omitempty"`
	UptimeSeconds float64    `json:"uptime_seconds" required:"true" doc:"of the current run; 0 when not running"`
	Restarts      int        `json:"restarts" required:"true" doc:"automatic restarts since the last start on request"`
	LastExitCode  *int       `json:"last_exit_code" doc:"of the last run; 128+N when killed by signal N; null before any exit"`
	LastSignal    string     `json:"last_exit_signal,omitempty" doc:"the signal that ended the last run"`
	LastError     string     `json:"last_error,omitempty" doc:"why the last start failed or the program is fatal"`
	WaitingFor    []string   `json:"waiting_for,omitempty" doc:"dependencies not ready yet"`
}

// program is one program's supervisor.
type program struct {
	svc *Service

	mu         sync.Mutex
	def        *Program
	state      string
	pid        int
	startedAt  time.Time
	restarts   int
	failures   int // failed starts in a row
	lastExit   *int
	lastSignal string
	lastErr    string
	waiting    []string
	stop       chan struct{} // closed to end the current loop
	done       chan struct{} // closed when the current loop has returned
	ended      time.Time     // when the last loop returned (Activity)
}

func newProgram(svc *Service, def *Program) *program {
	return &program{svc: svc, def: def, state: StateStopped}
}

// status is a copy of the live state.
func (p *program) status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{State: p.state, Restarts: p.restarts, LastExitCode: p.lastExit, LastSignal: p.lastSignal,
		LastError: p.lastErr, WaitingFor: append([]string(nil), p.waiting...)}
	if p.pid > 0 {
		st.PID = p.pid
		at := p.startedAt
		st.StartedAt = &at
		st.UptimeSeconds = p.svc.deps.Clock.Now().Sub(at).Seconds()
	}
	return st
}

// set changes fields under the lock and wakes everyone waiting on a change
// (dependents, start?wait=true).
func (p *program) set(fn func()) {
	p.mu.Lock()
	fn()
	p.mu.Unlock()
	p.svc.changed()
}

// start begins supervising unless a loop already runs; a fatal, exited or
// stopped program starts afresh (counters reset).
func (p *program) start() {
	// Under the service's lock, so a start (a dependency's, from a waiting
	// program) never slips in after Close has halted everything.
	p.svc.mu.Lock()
	defer p.svc.mu.Unlock()
	if p.svc.closed {
		return
	}
	p.mu.Lock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			p.mu.Unlock()
			return // already supervised
		}
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	p.failures, p.restarts, p.lastErr = 0, 0, ""
	p.state = StateStarting
	def, stop, done := p.def, p.stop, p.done
	p.mu.Unlock()
	p.svc.changed()
	p.svc.wg.Go(func() {
		defer close(done)
		p.loop(def, stop)
		p.mu.Lock()
		p.ended = p.svc.deps.Clock.Now()
		p.mu.Unlock()
	})
}

// halt ends supervision: the process group gets the stop signal, then
// SIGKILL after stop_timeout; it returns when the loop has ended.
func (p *program) halt() {
	p.mu.Lock()
	stop, done := p.stop, p.done
	if done != nil {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	p.mu.Unlock()
	if done != nil {
		<-done
	}
}

// running reports whether a loop is supervising the program.
func (p *program) supervised() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

type exitResult struct {
	code   int
	signal string
	err    error
}

// loop runs def until stop closes or its policy ends it.
func (p *program) loop(def *Program, stop chan struct{}) {
	for {
		if err := p.waitDeps(def, stop); err != nil {
			if errors.Is(err, errStopped) {
				p.set(func() { p.state, p.waiting = StateStopped, nil })
				return
			}
			p.fatal(def, err.Error())
			return
		}
		res, started, stopped := p.runOnce(def, stop)
		if stopped {
			p.set(func() { p.state, p.pid = StateStopped, 0 })
			p.svc.journal(def.ID, "info", "stopped", map[string]any{"exit_code": res.code})
			return
		}
		failed := res.err != nil || res.code != 0
		restart := def.Restart == RestartAlways || (def.Restart == RestartOnFailure && failed)
		if !started && (failed || def.Restart == RestartAlways) {
			// A failed start (too quick, not ready, could not launch).
			p.mu.Lock()
			p.failures++
			n := p.failures
			p.mu.Unlock()
			if n > *def.StartRetries {
				p.fatal(def, fmt.Sprintf("%d failed starts in a row (start_retries %d): %s", n, *def.StartRetries, p.lastError()))
				return
			}
			delay := dur(def.Backoff.Initial) << (n - 1)
			if delay > dur(def.Backoff.Max) || delay <= 0 {
				delay = dur(def.Backoff.Max)
			}
			p.set(func() { p.state = StateBackoff })
			p.crashed(def, res, fmt.Sprintf("restarting in %s", delay))
			select {
			case <-stop:
				p.set(func() { p.state = StateStopped })
				return
			case <-time.After(delay):
			}
			p.set(func() { p.restarts++; p.state = StateStarting })
			continue
		}
		if !restart {
			p.set(func() { p.state = StateExited })
			if failed {
				p.crashed(def, res, "not restarted (restart "+def.Restart+")")
			} else {
				p.svc.journal(def.ID, "info", "exited", map[string]any{"exit_code": 0})
			}
			return
		}
		// A run that had started ended: restart at once, as supervisord
		// and systemd do; the backoff is for failed starts.
		p.set(func() { p.restarts++; p.failures = 0; p.state = StateStarting })
		if failed {
			p.crashed(def, res, "restarting")
		} else {
			p.svc.journal(def.ID, "info", "exited, restarting (restart always)", map[string]any{"exit_code": 0})
		}
	}
}

var errStopped = errors.New("stopped")

// outputDrain bounds the wait for a run's output after its exit.
const outputDrain = 500 * time.Millisecond

func (p *program) lastError() string { p.mu.Lock(); defer p.mu.Unlock(); return p.lastErr }

// fatal reports, then sets, the fatal state: whoever sees it can count on
// the event having been sent.
func (p *program) fatal(def *Program, why string) {
	p.svc.journal(def.ID, "error", "fatal: "+why, nil)
	p.svc.deps.Notifier.Notify(contract.Event{Time: p.svc.deps.Clock.Now(), Kind: contract.EventProgramCrashed,
		Source: "daemon", Level: "error", Title: "Program " + def.ID + " is fatal", Body: why,
		Data: map[string]any{"program": def.ID, "state": StateFatal}})
	p.set(func() { p.state, p.lastErr, p.pid, p.waiting = StateFatal, why, 0, nil })
}

// crashed tells the journal and the notifier that a run failed.
func (p *program) crashed(def *Program, res exitResult, next string) {
	st := p.status()
	data := map[string]any{"program": def.ID, "state": st.State, "restarts": st.Restarts}
	what := ""
	switch {
	case res.err != nil:
		what = res.err.Error()
		data["error"] = what
	case res.signal != "":
		what = "killed by SIG" + res.signal
		data["exit_code"], data["signal"] = res.code, res.signal
	default:
		what = fmt.Sprintf("exited with code %d", res.code)
		data["exit_code"] = res.code
	}
	p.svc.journal(def.ID, "error", what+"; "+next, data)
	if res.err == nil && res.code == 0 {
		return
	}
	p.svc.deps.Notifier.Notify(contract.Event{Time: p.svc.deps.Clock.Now(), Kind: contract.EventProgramCrashed,
		Source: "daemon", Level: "error", Title: "Program " + def.ID + " " + what, Body: next, Data: data})
}

// waitDeps starts the program's dependencies that are stopped and waits
// until each is running or has exited 0; a fatal (or failed) dependency
// fails the start.
func (p *program) waitDeps(def *Program, stop chan struct{}) error {
	for {
		ch := p.svc.changes()
		var waiting []string
		for _, d := range def.DependsOn {
			dp := p.svc.program(d)
			if dp == nil {
				return fmt.Errorf("dependency %q is not defined", d)
			}
			st := dp.status()
			switch {
			case st.State == StateRunning:
			case st.State == StateExited && st.LastExitCode != nil && *st.LastExitCode == 0:
			case st.State == StateFatal:
				return fmt.Errorf("dependency %q is fatal: %s", d, st.LastError)
			case st.State == StateExited:
				return fmt.Errorf("dependency %q exited with code %d", d, *st.LastExitCode)
			case st.State == StateStopped:
				dp.start()
				waiting = append(waiting, d)
			default:
				waiting = append(waiting, d)
			}
		}
		p.set(func() { p.waiting = waiting })
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-stop:
			return errStopped
		case <-ch:
		}
	}
}

// runOnce launches def and supervises that run: started reports whether it
// reached running, stopped whether it ended because stop closed.
func (p *program) runOnce(def *Program, stop chan struct{}) (res exitResult, started, stopped bool) {
	cmd, err := p.command(def)
	var outputs []*os.File
	if err == nil {
		outputs, err = p.svc.spawner.StartPiped(cmd)
	}
	if err != nil {
		p.set(func() { p.lastErr = "start: " + err.Error() })
		return exitResult{code: -1, err: fmt.Errorf("start: %w", err)}, false, false
	}
	pid := p.svc.deps.Clock.Now()
	p.set(func() { p.pid, p.startedAt, p.lastErr = cmd.Process.Pid, pid, "" })
	p.svc.journal(def.ID, "info", "started", map[string]any{"pid": cmd.Process.Pid})
	drained := make(chan struct{})
	var fwd sync.WaitGroup
	for i, f := range outputs {
		stream := []string{"stdout", "stderr"}[i]
		fwd.Go(func() { p.forward(def.ID, stream, cmd.Process.Pid, f) })
	}
	go func() { fwd.Wait(); close(drained) }()
	// The journal gets a run's last lines before its exit: the pipes
	// close once the group is gone, unless a process that left the group
	// holds them, which is waited for only briefly.
	drain := func() {
		select {
		case <-drained:
		case <-time.After(outputDrain):
		}
	}
	exited := make(chan exitResult, 1)
	go func() { exited <- waitResult(cmd) }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan error, 1)
	go func() { ready <- p.readiness(ctx, def) }()

	leader := cmd.Process.Pid
	for {
		select {
		case err := <-ready:
			ready = nil
			if err != nil {
				p.set(func() { p.lastErr = "readiness: " + err.Error() })
				proc.KillTree(leader, syscall.SIGKILL)
				r := <-exited
				drain()
				p.set(func() { p.pid = 0; p.recordExit(r) })
				r.err = fmt.Errorf("readiness: %w", err)
				return r, false, false
			}
			started = true
			p.set(func() { p.state = StateRunning })
		case r := <-exited:
			// The leader is gone; what it left in its group goes too
			// (systemd's control-group kill mode), so a restart never
			// finds an old grandchild holding its port.
			_ = proc.KillGroup(leader, syscall.SIGKILL)
			drain()
			p.set(func() { p.pid = 0; p.recordExit(r) })
			return r, started, false
		case <-stop:
			r := p.terminate(def, leader, exited)
			drain()
			p.set(func() { p.pid = 0; p.recordExit(r) })
			return r, started, true
		}
	}
}

// terminate sends the stop signal to the program's process tree, waits
// stop_timeout for the leader, then SIGKILLs the whole tree.
func (p *program) terminate(def *Program, leader int, exited chan exitResult) exitResult {
	sig, _ := proc.ParseSignal(def.StopSignal)
	return proc.StopTree(leader, sig, dur(def.StopTimeout), exited)
}

func (p *program) recordExit(r exitResult) {
	if r.err != nil && r.code == -1 {
		return
	}
	code := r.code
	p.lastExit, p.lastSignal = &code, r.signal
}

func waitResult(cmd *exec.Cmd) exitResult {
	err := cmd.Wait()
	if cmd.ProcessState == nil {
		return exitResult{code: -1, err: err}
	}
	code, sig := proc.ExitStatus(cmd.ProcessState)
	return exitResult{code: code, signal: sig}
}

// command builds the program's command: its own process group, its user
// and its environment.
func (p *program) command(def *Program) (*exec.Cmd, error) {
	attr, userEnv, err := proc.Attr(p.svc.deps.Common.User(def.User))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(def.Command, def.Args...)
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	cmd.SysProcAttr = attr
	cmd.Env = proc.Env(userEnv, proc.Vars(def.Env))
	cmd.Dir = proc.WorkDir(def.Cwd, userEnv)
	return cmd, nil
}

// forward writes each line of one output stream to the journal, with the
// program's id as source and the stream in the fields.
func (p *program) forward(id, stream string, pid int, r *os.File) {
	defer r.Close()
	proc.ReadLines(r, func(line string) {
		p.svc.deps.Journal.Record(contract.JournalEntry{Time: p.svc.deps.Clock.Now(), Source: id, Level: "info",
			Message: line, Fields: map[string]any{"stream": stream, "pid": pid}})
	})
}

// readiness returns nil when the run counts as started: once its probe
// passes, or, without a probe, once it has been up start_seconds.
func (p *program) readiness(ctx context.Context, def *Program) error {
	pr := def.Readiness
	if pr == nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(dur(def.StartSeconds)):
			return nil
		}
	}
	deadline := time.Now().Add(dur(pr.Timeout))
	var last error
	for {
		attempt := max(dur(pr.Interval), time.Second)
		actx, cancel := context.WithTimeout(ctx, attempt)
		last = p.probeOnce(actx, def)
		cancel()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %gs: %v", pr.Timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(dur(pr.Interval)):
		}
	}
}

var probeClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (p *program) probeOnce(ctx context.Context, def *Program) error {
	pr := def.Readiness
	switch {
	case pr.TCP != "":
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", pr.TCP)
		if err != nil {
			return err
		}
		return c.Close()
	case pr.HTTP != "":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, pr.HTTP, nil)
		if err != nil {
			return err
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			return fmt.Errorf("GET %s answered %d", pr.HTTP, resp.StatusCode)
		}
		return nil
	default:
		attr, userEnv, err := proc.Attr(p.svc.deps.Common.User(def.User))
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, pr.Command[0], pr.Command[1:]...)
		cmd.SysProcAttr = attr
		cmd.Env = proc.Env(userEnv, proc.Vars(def.Env))
		cmd.Dir = proc.WorkDir(def.Cwd, userEnv)
		cmd.Cancel = func() error { return proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = time.Second
		if err := p.svc.spawner.Start(cmd); err != nil {
			return err
		}
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("%s: %v", strings.Join(pr.Command, " "), err)
		}
		return nil
	}
}
