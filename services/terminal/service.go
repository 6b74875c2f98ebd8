// Package terminal owns the container's interactive shells: PTY sessions
// that outlive their clients, the WebSocket that streams them (the protocol in
// docs/spec/operations.md "Terminal WebSocket"), their scrollback and a VT screen model
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
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// Error codes of this service.
const (
	CodeShellStart = "SHELL_START_FAILED"
)

func init() {
	fault.RegisterCode(CodeShellStart, http.StatusBadRequest)
}

// Options are the service's settings, each a flag --terminal-<key> (so
// DECKHAND_TERMINAL_<KEY>, e.g. DECKHAND_TERMINAL_IDLE_TIMEOUT=2h): durations
// in Go syntax, sizes in bytes. Browser origins are the host's request
// policy's business (--domain, --allowed-origins), not the service's.
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

// Settings are the terminal service's flags.
type Settings struct{ Options }

// Flags declares --terminal-idle-timeout, --terminal-scrollback, ...
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.DurationVar(&s.IdleTimeout, "terminal-idle-timeout", 30*time.Minute, "end a session left without a client this long (0: never)")
	fs.DurationVar(&s.ExitedRetention, "terminal-exited-retention", 10*time.Minute, "keep an ended session listed this long (0: until deleted)")
	fs.DurationVar(&s.KillGrace, "terminal-kill-grace", 3*time.Second, "wait between SIGHUP and SIGKILL when a session ends")
	fs.IntVar(&s.Scrollback, "terminal-scrollback", 1<<20, "bytes of raw output kept per session (at least 1024)")
	fs.IntVar(&s.ClientQueue, "terminal-client-queue", 8<<20, "bytes queued for one client before it is dropped with 1008 (at least 4096)")
	fs.DurationVar(&s.DropGrace, "terminal-drop-grace", 5*time.Second, "time a dropped client gets for the close frame")
	fs.DurationVar(&s.PingInterval, "terminal-ping-interval", 30*time.Second, "WebSocket ping interval")
	fs.IntVar(&s.MaxSessions, "terminal-max-sessions", 1000, "live sessions at most")
	fs.StringVar(&s.Shell, "terminal-shell", "", "default shell (else $SHELL, /bin/bash, /bin/sh)")
}

// Validate checks the bounds.
func (s *Settings) Validate() error {
	switch {
	case s.IdleTimeout < 0, s.ExitedRetention < 0, s.KillGrace < 0:
		return fmt.Errorf("--terminal-idle-timeout, --terminal-exited-retention, --terminal-kill-grace: must not be negative")
	case s.PingInterval <= 0:
		return fmt.Errorf("--terminal-ping-interval: must be positive")
	case s.DropGrace <= 0:
		return fmt.Errorf("--terminal-drop-grace: must be positive")
	case s.Scrollback < 1024:
		return fmt.Errorf("--terminal-scrollback: must be at least 1024")
	case s.ClientQueue < 4096:
		return fmt.Errorf("--terminal-client-queue: must be at least 4096")
	case s.MaxSessions < 1:
		return fmt.Errorf("--terminal-max-sessions: must be at least 1")
	}
	return nil
}

// DefaultSettings are the flags' defaults.
func DefaultSettings() *Settings {
	s := &Settings{}
	s.Flags(pflag.NewFlagSet("terminal", pflag.ContinueOnError))
	return s
}

// Service is the terminal service.
type Service struct {
	deps contract.ServiceDeps
	opt  Options
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[string]*Session
	starting int // creates past the limit check whose shell is starting
	closed   bool

	stop    chan struct{}
	janitor sync.WaitGroup
}

// New builds the service; sessions start only when asked for. A nil set
// takes the defaults.
func New(deps contract.ServiceDeps, set *Settings) *Service {
	if set == nil {
		set = DefaultSettings()
	}
	opt := set.Options
	deps = deps.WithDefaults()
	s := &Service{
		deps:     deps,
		opt:      opt,
		log:      deps.Logger,
		sessions: make(map[string]*Session),
		stop:     make(chan struct{}),
	}
	s.janitor.Go(s.sweep)
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
	all := slices.Collect(maps.Values(s.sessions))
	s.sessions = map[string]*Session{}
	s.mu.Unlock()
	close(s.stop)
	var wg sync.WaitGroup
	for _, sess := range all {
		wg.Go(func() { sess.terminate(s.opt.KillGrace) })
	}
	wg.Wait()
	s.janitor.Wait()
	return nil
}

// sweep ends sessions left without a client for IdleTimeout and forgets
// ended ones after ExitedRetention. It compares against the injected clock
// so tests can move time; the ticker only sets how often it looks.
func (s *Service) sweep() {
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
	return nil, fault.NotFound("terminal session", id)
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
		return fault.NotFound("terminal session", id)
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
