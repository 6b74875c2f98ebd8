// Package terminal owns the container's interactive shells: PTY sessions
// that outlive their clients, the WebSocket that streams them (the protocol in
// operations.md "Terminal WebSocket"), their scrollback and a VT screen model
// for screenshots and reattach, and the web terminal page (xterm.js) served at GET /.
//
// Hot path: one goroutine per session reads the PTY in 64 KiB chunks into a
// bounded ring and into each client's bounded queue; one goroutine per client
// drains its queue into as few WebSocket frames as it can. The PTY reader
// never waits on a client: a client whose queue overflows is closed with 1008.
// The VT screen model follows the ring in its own goroutine per session and
// never holds the reader up: output faster than it parses is skipped (see
// screen.go). It serves screenshots and, once the ring has been cut, the
// redraw a newly attached client gets instead of the raw ring (redraw.go).
package terminal

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Error codes of this service.
const (
	CodeShellStart = "SHELL_START_FAILED"
)

func init() {
	platform.RegisterCode(CodeShellStart, http.StatusBadRequest)
}

// Options are the service's settings; the agent passes them as strings in
// ServiceDeps.Options (durations in Go syntax, sizes in bytes). A key the
// agent does not pass is read from DECKHAND_TERMINAL_<KEY> (for example
// DECKHAND_TERMINAL_IDLE_TIMEOUT=2h), so operators can tune the service
// without agent flags.
type Options struct {
	// IdleTimeout ends a session that has had no client attached for this
	// long ("idle_timeout", default 30m, "0" = never).
	IdleTimeout time.Duration
	// ExitedRetention keeps an ended session listed (with its exit code and
	// scrollback) this long before it is forgotten ("exited_retention", 10m).
	ExitedRetention time.Duration
	// KillGrace is the wait between SIGHUP and SIGKILL ("kill_grace", 3s).
	KillGrace time.Duration
	// Scrollback is the ring of raw output kept per session ("scrollback", 1 MiB).
	Scrollback int
	// ClientQueue bounds the bytes queued for one client before it is
	// dropped with 1008 ("client_queue", 8 MiB).
	ClientQueue int
	// DropGrace is how long a client dropped for overflowing gets to take
	// the frame in flight and the 1008 close before its socket is cut
	// ("drop_grace", 5s).
	DropGrace time.Duration
	// PingInterval between WebSocket pings ("ping_interval", 30s); a client
	// that answers no ping for two intervals is dropped.
	PingInterval time.Duration
	// MaxSessions caps live sessions ("max_sessions", 1000).
	MaxSessions int
	// Shell is the default shell ("shell"; else $SHELL, /bin/bash, /bin/sh).
	Shell string
}

func parseOptions(given map[string]string, log *slog.Logger) Options {
	m := map[string]string{}
	for _, k := range []string{"idle_timeout", "exited_retention", "kill_grace", "ping_interval", "drop_grace",
		"scrollback", "client_queue", "max_sessions", "shell"} {
		if v, ok := given[k]; ok {
			m[k] = v
		} else if v, ok := os.LookupEnv("DECKHAND_TERMINAL_" + strings.ToUpper(k)); ok {
			m[k] = v
		}
	}
	o := Options{
		IdleTimeout:     30 * time.Minute,
		ExitedRetention: 10 * time.Minute,
		KillGrace:       3 * time.Second,
		Scrollback:      1 << 20,
		ClientQueue:     8 << 20,
		PingInterval:    30 * time.Second,
		DropGrace:       5 * time.Second,
		MaxSessions:     1000,
	}
	dur := func(key string, dst *time.Duration, allowZero bool) {
		if s, ok := m[key]; ok {
			d, err := time.ParseDuration(s)
			if s == "0" {
				d, err = 0, nil
			}
			if err != nil || d < 0 || (d == 0 && !allowZero) {
				log.Warn("terminal: ignoring bad option", "option", key, "value", s)
				return
			}
			*dst = d
		}
	}
	size := func(key string, dst *int, min int) {
		if s, ok := m[key]; ok {
			n, err := strconv.Atoi(s)
			if err != nil || n < min {
				log.Warn("terminal: ignoring bad option", "option", key, "value", s)
				return
			}
			*dst = n
		}
	}
	dur("idle_timeout", &o.IdleTimeout, true)
	dur("exited_retention", &o.ExitedRetention, true)
	dur("kill_grace", &o.KillGrace, true)
	dur("ping_interval", &o.PingInterval, false)
	dur("drop_grace", &o.DropGrace, false)
	size("scrollback", &o.Scrollback, 1024)
	size("client_queue", &o.ClientQueue, 4096)
	size("max_sessions", &o.MaxSessions, 1)
	o.Shell = m["shell"]
	return o
}

// Service is the terminal service.
type Service struct {
	deps platform.ServiceDeps
	opt  Options
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[string]*Session
	starting int // creates past the limit check whose shell is starting
	closed   bool

	stop    chan struct{}
	janitor sync.WaitGroup

	wsHandler fiber.Handler
}

// New builds the service; sessions start only when asked for.
func New(deps platform.ServiceDeps) *Service {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Clock == nil {
		deps.Clock = platform.SystemClock{}
	}
	s := &Service{
		deps:     deps,
		opt:      parseOptions(deps.Options, deps.Logger),
		log:      deps.Logger,
		sessions: make(map[string]*Session),
		stop:     make(chan struct{}),
	}
	s.wsHandler = newWSHandler(s)
	s.janitor.Add(1)
	go s.sweep()
	return s
}

// Close ends every session (SIGHUP, then SIGKILL after the grace period),
// reaps their processes and stops the janitor.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	all := make([]*Session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		all = append(all, sess)
	}
	s.sessions = map[string]*Session{}
	s.mu.Unlock()
	close(s.stop)
	var wg sync.WaitGroup
	for _, sess := range all {
		wg.Add(1)
		go func() { defer wg.Done(); sess.terminate(s.opt.KillGrace) }()
	}
	wg.Wait()
	s.janitor.Wait()
	return nil
}

// sweep ends sessions left without a client for IdleTimeout and forgets
// ended ones after ExitedRetention. It compares against the injected clock
// so tests can move time; the ticker only sets how often it looks.
func (s *Service) sweep() {
	defer s.janitor.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		now := s.deps.Clock.Now()
		var idle []*Session
		s.mu.Lock()
		for id, sess := range s.sessions {
			st := sess.state()
			switch {
			case st.exited && s.opt.ExitedRetention > 0 && now.Sub(st.exitedAt) >= s.opt.ExitedRetention:
				delete(s.sessions, id)
			case !st.exited && st.clients == 0 && s.opt.IdleTimeout > 0 && now.Sub(st.idleSince) >= s.opt.IdleTimeout:
				delete(s.sessions, id)
				idle = append(idle, sess)
			}
		}
		s.mu.Unlock()
		for _, sess := range idle {
			s.log.Info("terminal: ending idle session", "id", sess.id, "pid", sess.pid)
			s.janitor.Add(1) // Close waits for these too
			go func() { defer s.janitor.Done(); sess.terminate(s.opt.KillGrace) }()
		}
	}
}

func (s *Service) get(id string) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[id]; ok {
		return sess, nil
	}
	return nil, platform.NotFound("terminal session", id)
}

// remove forgets a session and ends it; it returns once its process is reaped.
func (s *Service) remove(ctx context.Context, id string) error {
	s.mu.Lock()
	sess, ok := s.sessions[id]
	if ok {
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	if !ok {
		return platform.NotFound("terminal session", id)
	}
	sess.terminate(s.opt.KillGrace)
	return nil
}

func (s *Service) defaultShell() string {
	for _, sh := range []string{s.opt.Shell, os.Getenv("SHELL"), "/bin/bash", "/bin/sh"} {
		if sh == "" {
			continue
		}
		if st, err := os.Stat(sh); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return sh
		}
	}
	return "/bin/sh"
}
