package process

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/proc"
	"deckhand/services/process/outlog"
)

// process is one process the service started (or, after a restart, the
// record of one).
type process struct {
	svc       *Service
	id        string
	spec      Spec
	hash      string
	keepStdin bool
	log       *outlog.Log
	capture   *capture // run's first bytes of each stream; nil for start

	mu     sync.Mutex
	rec    Process
	exited bool     // the leader has exited: its group is no longer signalled
	queued bool     // counted in svc.finished; guarded by svc.mu
	stdin  *os.File // the pipe to its standard input; nil once closed
	pty    *os.File // the pty's master; nil once the process is gone

	stdinMu sync.Mutex // one write to its input at a time

	kill    chan time.Duration // DELETE: stop the tree with this grace
	started chan struct{}      // closed once it is running or failed to start
	ended   chan struct{}      // closed once the record is final
	done    chan struct{}      // closed once it ended and its output is complete
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Service) newProcess(spec Spec, cwd, hash string, keepStdin bool, captureMax int) *process {
	id := newID()
	p := &process{svc: s, id: id, spec: spec, hash: hash, keepStdin: keepStdin,
		log:  outlog.New(s.budget, filepath.Join(s.outDir, id)),
		kill: make(chan time.Duration, 1), started: make(chan struct{}), ended: make(chan struct{}), done: make(chan struct{})}
	if captureMax > 0 {
		p.capture = &capture{max: captureMax}
	}
	p.rec = Process{ID: id, Tag: spec.Tag, ClientToken: spec.ClientToken, Cmd: spec.argv(), Cwd: cwd, User: spec.User,
		State: StateRunning, StartedAt: s.deps.Clock.Now(), TimeoutMS: spec.TimeoutMS}
	if spec.PTY != nil {
		p.rec.PTY = new(*spec.PTY)
	}
	return p
}

// snapshot is the record now, with its output counts.
func (p *process) snapshot() Process {
	p.mu.Lock()
	r := p.rec
	if r.PTY != nil {
		r.PTY = new(*r.PTY)
	}
	p.mu.Unlock()
	var closed bool
	r.StdoutBytes, r.StderrBytes, r.OutputBytes, r.OutputKeptFrom, closed = p.log.Stats()
	r.OutputComplete = closed && r.ended()
	if !r.ended() {
		r.DurationMS = ms(p.svc.deps.Clock.Now().Sub(r.StartedAt))
	}
	return r
}

// finish makes the record final and tells the journal.
func (p *process) finish(reason string, code int, signal, errText string, end time.Time) {
	p.mu.Lock()
	p.rec.State, p.rec.EndReason, p.rec.Signal, p.rec.Error = stateOf(reason), reason, signal, errText
	if reason != EndFailedToStart {
		p.rec.ExitCode = new(code)
	}
	p.rec.EndedAt = &end
	p.rec.DurationMS = ms(end.Sub(p.rec.StartedAt))
	p.rec.StdinOpen = false
	p.mu.Unlock()
	close(p.ended)
	rec := p.snapshot()
	p.save(rec)
	level := "info"
	if rec.State != StateExited || (rec.ExitCode != nil && *rec.ExitCode != 0) {
		level = "warn"
	}
	if rec.State == StateFailedToStart {
		level = "error"
	}
	f := p.fields()
	f["state"], f["end_reason"], f["duration_ms"], f["output_bytes"] = rec.State, rec.EndReason, rec.DurationMS, rec.OutputBytes
	msg := "process " + p.id + " " + rec.State
	if rec.ExitCode != nil {
		f["exit_code"] = *rec.ExitCode
		if rec.State == StateExited {
			msg += " with code " + strconv.Itoa(*rec.ExitCode)
		}
	}
	if rec.Signal != "" {
		f["signal"] = rec.Signal
		msg += " by SIG" + rec.Signal
	}
	if rec.Error != "" {
		f["error"] = rec.Error
		msg += ": " + rec.Error
	}
	p.svc.journal(level, msg, f)
}

// input is where its standard input is written: the pipe, or the pty.
func (p *process) input() *os.File {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stdin != nil {
		return p.stdin
	}
	return p.pty
}

// closeStdin closes the pipe to its standard input; a write in progress
// ends with os.ErrClosed.
func (p *process) closeStdin() bool {
	p.mu.Lock()
	f := p.stdin
	p.stdin = nil
	p.rec.StdinOpen = p.pty != nil
	p.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
	return f != nil
}

// closePTY closes the pty's master once nothing reads it any more.
func (p *process) closePTY() {
	p.mu.Lock()
	f := p.pty
	p.pty = nil
	p.rec.StdinOpen = false
	p.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
}

// fields identify the process in journal entries.
func (p *process) fields() map[string]any {
	f := map[string]any{"id": p.id, "cmd": formatArgv(p.rec.Cmd)}
	if p.rec.PID != 0 {
		f["pid"] = p.rec.PID
	}
	if p.spec.Tag != "" {
		f["tag"] = p.spec.Tag
	}
	return f
}

func (p *process) save(rec Process) <-chan struct{} {
	return p.svc.store.put(stored{Process: rec, SpecHash: p.hash})
}

// capture keeps the first max bytes of each stream for run's answer.
type capture struct {
	max       int
	mu        sync.Mutex
	out, err  []byte
	truncated bool
}

func (c *capture) add(stream byte, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf := &c.out
	if stream == outlog.Stderr {
		buf = &c.err
	}
	if room := c.max - len(*buf); len(p) > room {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	*buf = append(*buf, p...)
}

// specHash identifies a request for client_token replays: the spec
// without the token itself.
func specHash(spec Spec, extra any) string {
	spec.ClientToken = ""
	raw, _ := json.Marshal(struct {
		Spec  Spec
		Extra any
	}{spec, extra})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}

// buildEnv is a process's environment (proc.Env): the agent's without
// what is the agent's own, the user's HOME, USER and LOGNAME, TERM on a
// pty, extra, then DECKHAND_PROCESS_ID.
func buildEnv(userEnv []string, extra map[string]string, id string, pty bool) []string {
	var term []string
	if pty {
		term = []string{"TERM=" + defaultTermEnvVar}
	}
	return proc.Env(userEnv, term, proc.Vars(extra), []string{idEnv + "=" + id})
}

// get finds a process.
func (s *Service) get(id string) (*process, error) {
	s.mu.Lock()
	p := s.procs[id]
	s.mu.Unlock()
	if p == nil {
		return nil, fault.NotFound("process", id)
	}
	<-p.started
	return p, nil
}
