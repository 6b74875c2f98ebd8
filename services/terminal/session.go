package terminal

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hinshun/vt10x"

	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// Size limits of a terminal.
const (
	maxCols = 1000
	maxRows = 1000
)

// CreateRequest is the body of POST /api/v1/terminal/create (and the query of
// a WebSocket opened without an id).
type CreateRequest struct {
	Shell string            `json:"shell,omitempty" doc:"shell to run; default $SHELL, then /bin/bash, then /bin/sh"`
	Cwd   string            `json:"cwd,omitempty" doc:"working directory; default the service user's home"`
	Env   map[string]string `json:"env,omitempty" doc:"variables added to the service's environment (TERM=xterm-256color is set)"`
	Cols  *int              `json:"cols,omitempty" doc:"1-1000, default 80"`
	Rows  *int              `json:"rows,omitempty" doc:"1-1000, default 24"`
}

// Validate checks sizes and variable names.
func (r *CreateRequest) Validate() error {
	if r.Cols != nil && (*r.Cols < 1 || *r.Cols > maxCols) {
		return fault.Invalid("cols", "must be between 1 and %d", maxCols)
	}
	if r.Rows != nil && (*r.Rows < 1 || *r.Rows > maxRows) {
		return fault.Invalid("rows", "must be between 1 and %d", maxRows)
	}
	if strings.ContainsRune(r.Shell, 0) {
		return fault.Invalid("shell", "must not contain NUL")
	}
	if strings.ContainsRune(r.Cwd, 0) {
		return fault.Invalid("cwd", "must not contain NUL")
	}
	for k, v := range r.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fault.Invalid("env", "variable names must be non-empty and contain no '=' or NUL")
		}
		if strings.ContainsRune(v, 0) {
			return fault.Invalid("env", "value of %s must not contain NUL", k)
		}
	}
	return nil
}

// CreateResponse answers POST /api/v1/terminal/create.
type CreateResponse struct {
	ID        string `json:"id" required:"true"`
	PID       int    `json:"pid" required:"true"`
	Shell     string `json:"shell" required:"true"`
	Cols      int    `json:"cols" required:"true"`
	Rows      int    `json:"rows" required:"true"`
	CreatedAt string `json:"created_at" required:"true"`
}

// SessionInfo is one entry of GET /api/v1/terminal/sessions.
type SessionInfo struct {
	ID           string  `json:"id" required:"true"`
	PID          int     `json:"pid" required:"true"`
	Shell        string  `json:"shell" required:"true"`
	Cwd          string  `json:"cwd" required:"true"`
	Cols         int     `json:"cols" required:"true"`
	Rows         int     `json:"rows" required:"true"`
	Clients      int     `json:"clients" required:"true" doc:"WebSocket clients attached now"`
	CreatedAt    string  `json:"created_at" required:"true"`
	LastActivity string  `json:"last_activity" required:"true" doc:"last output or input"`
	Running      bool    `json:"running" required:"true"`
	ExitCode     *int    `json:"exit_code" doc:"null while running; 128+N when ended by signal N"`
	ExitedAt     *string `json:"exited_at"`
	OutputBytes  int64   `json:"output_bytes" required:"true" doc:"total output so far: the end offset for raw?since="`
}

// Session is one shell on a PTY.
type Session struct {
	id        string
	svc       *Service
	shell     string
	cwd       string
	pid       int
	cmd       *exec.Cmd
	ptmx      *os.File
	createdAt time.Time

	mu           sync.Mutex
	cols, rows   int
	ring         ring
	clients      map[*client]struct{}
	lastActivity time.Time
	idleSince    time.Time
	exited       bool
	exitCode     int
	exitedAt     time.Time

	readDone chan struct{}
	done     chan struct{} // process reaped, output drained, clients told
	drained  chan struct{} // a client writer took its queue

	termOnce sync.Once

	// The screen model, fed from the ring by parseLoop (see screen.go).
	parseWake chan struct{}
	scrMu     sync.Mutex
	vt        vt10x.Terminal
	vtOffset  int64 // ring offset the model has parsed up to
	vtCarry   []byte
	vtCols    int
	vtRows    int
	vtExact   bool // false after output was skipped, until the screen is redrawn
	vtLines   int  // newlines parsed since the model restarted
}

type sessionState struct {
	clients   int
	exited    bool
	exitedAt  time.Time
	idleSince time.Time
}

func (s *Session) state() sessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sessionState{clients: len(s.clients), exited: s.exited, exitedAt: s.exitedAt, idleSince: s.idleSince}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// create starts a shell on a new PTY and registers the session.
func (svc *Service) create(req CreateRequest) (*Session, error) {
	cols, rows := 80, 24
	if req.Cols != nil {
		cols = *req.Cols
	}
	if req.Rows != nil {
		rows = *req.Rows
	}
	shell := req.Shell
	if shell == "" {
		shell = svc.defaultShell()
	}
	resolved, err := resolveShell(shell)
	if err != nil {
		return nil, err
	}
	// The shell runs as --run-as when the agent has one (its HOME, USER
	// and LOGNAME with it), else as the service's own user.
	cred, userEnv, err := proc.Credential(svc.deps.Common.RunAs)
	if err != nil {
		return nil, fault.Errorf(fault.CodeUnavailable, "terminal: %v", err)
	}
	cwd := req.Cwd
	if cwd == "" {
		home := userEnv
		if home == nil {
			if h, err := os.UserHomeDir(); err == nil {
				home = []string{"HOME=" + h}
			}
		}
		cwd = proc.WorkDir("", home)
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return nil, fault.Invalid("cwd", "%s is not an existing directory", cwd)
	}

	// Reserve a slot before starting the shell, so creates racing each
	// other cannot all pass the check while their shells start.
	svc.mu.Lock()
	if svc.closed {
		svc.mu.Unlock()
		return nil, fault.Errorf(fault.CodeUnavailable, "the terminal service is shutting down")
	}
	if len(svc.sessions)+svc.starting >= svc.opt.MaxSessions {
		svc.mu.Unlock()
		return nil, fault.Errorf(fault.CodeTooManyRequests, "at most %d terminal sessions may exist at once", svc.opt.MaxSessions)
	}
	svc.starting++
	svc.mu.Unlock()
	release := func() { svc.mu.Lock(); svc.starting--; svc.mu.Unlock() }

	ptmx, cmd, err := startShell(resolved, cwd, shellEnv(userEnv, req.Env), cred, cols, rows)
	if err != nil {
		release()
		return nil, err
	}
	now := svc.deps.Clock.Now()
	s := &Session{
		id: newID(), svc: svc, shell: resolved, cwd: cwd, pid: cmd.Process.Pid, cmd: cmd, ptmx: ptmx,
		createdAt: now, cols: cols, rows: rows, ring: ring{max: svc.opt.Scrollback},
		clients: map[*client]struct{}{}, lastActivity: now, idleSince: now,
		readDone: make(chan struct{}), done: make(chan struct{}), drained: make(chan struct{}, 1),
		parseWake: make(chan struct{}, 1),
	}
	go s.readLoop()
	go s.waitLoop()
	go s.parseLoop()

	svc.mu.Lock()
	svc.starting--
	if svc.closed {
		svc.mu.Unlock()
		s.terminate(svc.opt.KillGrace)
		return nil, fault.Errorf(fault.CodeUnavailable, "the terminal service is shutting down")
	}
	svc.sessions[s.id] = s
	svc.mu.Unlock()
	svc.log.Info("terminal: session started", "id", s.id, "pid", s.pid, "shell", resolved)
	return s, nil
}

// shellEnv is a shell's environment (proc.Env): the service's without
// what is the agent's own (which may hold its token), plus the --run-as
// user's HOME, USER and LOGNAME, what a terminal needs, and the caller's.
func shellEnv(userEnv []string, extra map[string]string) []string {
	return proc.Env(userEnv, []string{"TERM=xterm-256color", "COLORTERM=truecolor"}, proc.Vars(extra))
}

// readLoop copies PTY output to the ring and every client. It starts with a
// small buffer so idle sessions stay small, and switches to a 64 KiB one as
// soon as a read fills it (bulk output).
func (s *Session) readLoop() {
	defer close(s.readDone)
	buf := make([]byte, 4096)
	var stalled time.Time
	for {
		n, err := s.ptmx.Read(buf)
		if n > 0 {
			s.output(buf[:n])
			if n == len(buf) && len(buf) < 64<<10 {
				buf = make([]byte, 64<<10)
			}
			stalled = s.pace(stalled)
		}
		if err != nil {
			return
		}
	}
}

// maxStall bounds how long output may wait for clients to catch up.
const maxStall = time.Second

// pace pauses reading while every attached client is behind (each has more
// than a quarter of its queue bound pending), so a CPU hiccup does not cost
// the fastest client its connection; the kernel's PTY buffer then holds the
// shell back, as flow control over ssh would. The pause is capped at
// maxStall per episode: a client that stays behind past it meets the queue
// bound and is dropped, so no client can hold the shell back for long.
func (s *Session) pace(stalled time.Time) time.Time {
	for s.allBehind() {
		now := time.Now()
		if stalled.IsZero() {
			stalled = now
		}
		left := maxStall - now.Sub(stalled)
		if left <= 0 {
			return stalled
		}
		t := time.NewTimer(left)
		select {
		case <-s.drained:
		case <-t.C:
		}
		t.Stop()
	}
	return time.Time{}
}

func (s *Session) allBehind() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.clients) == 0 {
		return false
	}
	for c := range s.clients {
		if !c.behind() {
			return false
		}
	}
	return true
}

func (s *Session) output(p []byte) {
	now := s.svc.deps.Clock.Now()
	s.mu.Lock()
	s.ring.write(p)
	s.wakeParser()
	s.lastActivity = now
	for c := range s.clients {
		if !c.push(p) {
			s.svc.log.Warn("terminal: client dropped: output queue overflowed", "id", s.id, "queue_limit", c.max)
			delete(s.clients, c)
			if len(s.clients) == 0 {
				s.idleSince = now
			}
		}
	}
	s.mu.Unlock()
}

// waitLoop reaps the shell, lets the reader drain what it wrote, then tells
// every client the exit code (after all output) and releases the PTY.
func (s *Session) waitLoop() {
	_ = s.cmd.Wait()
	code, _ := proc.ExitStatus(s.cmd.ProcessState)
	select {
	case <-s.readDone:
	case <-time.After(2 * time.Second):
		// Something the shell left behind still holds the terminal; the
		// session ends with the shell, so stop reading.
		_ = s.ptmx.SetReadDeadline(time.Now())
		<-s.readDone
	}
	_ = s.ptmx.Close()
	now := s.svc.deps.Clock.Now()
	s.mu.Lock()
	s.exited, s.exitCode, s.exitedAt = true, code, now
	for c := range s.clients {
		c.finish(code)
	}
	s.mu.Unlock()
	close(s.done)
	s.svc.log.Info("terminal: session ended", "id", s.id, "pid", s.pid, "exit_code", code)
}

// terminate sends SIGHUP (what a terminal closing does), then SIGKILL after
// grace, and returns once the process is reaped.
func (s *Session) terminate(grace time.Duration) {
	select {
	case <-s.done:
		return
	default:
	}
	s.termOnce.Do(func() { signalGroup(s.pid, sigHangup) })
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.done:
		return
	case <-t.C:
	}
	signalGroup(s.pid, sigKill)
	<-s.done
}

// attach registers c and queues what puts its terminal in the session's
// state, in one step, so it sees every later byte exactly once. While the
// ring holds all output, that is the raw output (exact, scrollback
// included). Once the ring has been cut, the output that drew the screen
// may be gone (a full-screen program drawn long ago), so the client gets a
// redraw of the screen model instead, followed by the raw bytes the model
// has not parsed yet. It does not make the model catch up first: under a
// flood that parse chases the shell for seconds, and the raw
// bytes after the redraw bring the client to the same screen. Only a model
// that has fallen out of the ring parses one chunk (parseChunk, a few ms),
// which restarts it inside the ring. scrMu only waits for the chunk
// parseLoop is on.
func (s *Session) attach(c *client) {
	s.scrMu.Lock()
	defer s.scrMu.Unlock()
	s.mu.Lock()
	from := s.ring.oldest()
	stale := from > 0 && (s.vt == nil || s.vtOffset-int64(len(s.vtCarry)) < from)
	s.mu.Unlock()
	if stale {
		s.catchUp(parseChunk)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	from = s.ring.oldest()
	var replay []byte
	switch {
	case from == 0:
		replay = s.ring.since(0)
	case s.vt != nil && s.vtOffset-int64(len(s.vtCarry)) >= from:
		// The model holds back a rune cut at the end of what it parsed.
		replay = redraw(s.vt)
		replay = append(replay, s.ring.since(s.vtOffset-int64(len(s.vtCarry)))...)
	default:
		// Output outran even this catch-up: replay the held tail from a
		// line start, so no escape sequence is split.
		replay = s.ring.since(from)
		if i := indexByte(replay, '\n'); i >= 0 && i < 4096 {
			replay = replay[i+1:]
		}
		replay = append([]byte("\x1b[0m"), replay...)
	}
	c.replay(replay)
	if s.exited {
		c.finish(s.exitCode)
		return
	}
	s.clients[c] = struct{}{}
}

func (s *Session) detach(c *client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[c]; ok {
		delete(s.clients, c)
		if len(s.clients) == 0 {
			s.idleSince = s.svc.deps.Clock.Now()
		}
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// input writes client keystrokes to the shell.
func (s *Session) input(p []byte) {
	if _, err := s.ptmx.Write(p); err == nil {
		now := s.svc.deps.Clock.Now()
		s.mu.Lock()
		s.lastActivity = now
		s.mu.Unlock()
	}
}

// resize changes the PTY size (the shell gets SIGWINCH); the last client to
// resize wins, as in tmux's "latest" policy.
func (s *Session) resize(cols, rows int) error {
	if cols < 1 || cols > maxCols {
		return fault.Invalid("cols", "must be between 1 and %d", maxCols)
	}
	if rows < 1 || rows > maxRows {
		return fault.Invalid("rows", "must be between 1 and %d", maxRows)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exited {
		return nil
	}
	if err := setSize(s.ptmx, cols, rows); err != nil {
		return fault.Internal("resize the terminal", err)
	}
	s.cols, s.rows = cols, rows
	return nil
}

func (s *Session) info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := SessionInfo{
		ID: s.id, PID: s.pid, Shell: s.shell, Cwd: s.cwd, Cols: s.cols, Rows: s.rows,
		Clients: len(s.clients), CreatedAt: stamp(s.createdAt), LastActivity: stamp(s.lastActivity),
		Running: !s.exited, OutputBytes: s.ring.total,
	}
	if s.exited {
		code, at := s.exitCode, stamp(s.exitedAt)
		in.ExitCode, in.ExitedAt = &code, &at
	}
	return in
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
