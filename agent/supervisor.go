package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"deckhand/agent/access"
	"deckhand/agent/egress"
	"deckhand/agent/gateway"
	"deckhand/platform"
	"deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/store"
	"deckhand/services/journal"
)

// Config is what `deckhand run` was asked to do.
type Config struct {
	Data     string
	Listen   string // gateway address
	Bind     string // host the services listen on
	PortBase int
	Services []string        // resolved with Select
	Isolate  map[string]bool // resolved with SelectIsolated
	// Settings are every service's settings (and the common ones: domain,
	// origins); nil takes the defaults. In-process services get them as
	// typed values, isolated ones through Settings.Env.
	Settings *Settings
	// Journal and Notifier are the seams every service and the supervisor
	// write to; nil: the agent's log.
	Journal  contract.Journal
	Notifier contract.Notifier

	ControlURL, ContainerID, ProjectID, Token string
	// TokenFile is the file Token was read from (--token-file), read
	// again when the control plane refuses Token (agent/access).
	TokenFile string
	// ControlKey pins the control plane's key (--control-key: a public key
	// in hex or a key-set file); InsecureControlURL allows plain http to a
	// control plane that is not on loopback (agent/access).
	ControlKey         string
	InsecureControlURL bool
	// SSHD is the OpenSSH server to keep running as root on the
	// container's loopback port 22 (sshd_linux.go); empty: none.
	SSHD string
	// PermissionsFile is a local proxy permissions document, used when
	// there is no control plane (reloaded on change).
	PermissionsFile string

	// Authorizer decides who passes the gateway; default the proxy
	// permissions authorizer (agent/access) fed by ControlURL or
	// PermissionsFile (with neither: loopback clients only).
	Authorizer gateway.Authorizer

	LogLevel string
	Logger   *slog.Logger
	// Out, when set, receives a short human summary (the URLs) once every
	// service is healthy; logs go to Logger.
	Out io.Writer
	// Executable is the deckhand binary children run as `deckhand service
	// NAME`, and the directory external service binaries are looked up in.
	// Default: os.Executable().
	Executable string
}

// Shutdown budget: the whole stop must fit in 5 s (docs/spec/operations.md, systemd).
const (
	gatewayGrace = 1 * time.Second
	serviceGrace = 2500 * time.Millisecond
)

// Supervisor runs the services and the gateway of one agent.
type Supervisor struct {
	cfg    Config
	log    *slog.Logger
	db     *store.DB
	units  []*unit
	gw     *gateway.Gateway
	gwLn   net.Listener
	access *access.Authorizer
	// egress enforces the container's network configuration (nil without
	// a control plane).
	egress  *egress.Engine
	started time.Time
	probe   *http.Client
	// sink is the journal sink the agent made (nil when the caller gave one).
	sink *journal.Sink
	// idle is the agent's activity and keep-alive leases (idle.go).
	idle *idleState
	// order is when the services that do not start first start.
	order *startOrder
	// peers are the hosts of the services serving in this process, for
	// the calls of one service's tools by another.
	peers *contract.Peers
}

// ErrAgentRunning is returned when another agent holds the data directory.
var ErrAgentRunning = errors.New("another deckhand agent is already running on this data directory")

// New prepares an agent: it takes the data directory's lock (failing fast
// when another agent holds it), then binds every port, so that every
// configuration mistake surfaces before anything starts.
func New(cfg Config) (*Supervisor, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable: %w", err)
		}
		cfg.Executable = exe
	}
	if cfg.Data == "" {
		return nil, errors.New("--data: must not be empty")
	}
	if cfg.Settings == nil {
		cfg.Settings = DefaultSettings()
	}
	if err := cfg.Settings.Validate(cfg.Services); err != nil {
		return nil, err
	}
	desktopEnv(cfg.Settings.Display())
	var sink *journal.Sink
	if cfg.Journal == nil {
		cfg.Journal, sink = journalSink(cfg.Data, cfg.Services, cfg.Logger)
	}
	if cfg.Notifier == nil {
		cfg.Notifier = newNotifier(cfg.Logger)
	}
	if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
		return nil, fmt.Errorf("--data %s: %w", cfg.Data, err)
	}
	policy, err := cfg.Settings.Common.Policy()
	if err != nil {
		return nil, err
	}
	trust, err := cfg.Settings.Common.LocalTrust()
	if err != nil {
		return nil, err
	}
	s := &Supervisor{cfg: cfg, log: cfg.Logger, probe: probeClient(), sink: sink, order: newStartOrder(), peers: &contract.Peers{}}
	db, err := store.Open(filepath.Join(cfg.Data, "agent.db"))
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%w (--data %s: %s is locked)", ErrAgentRunning, cfg.Data, filepath.Join(cfg.Data, "agent.db"))
	}
	if err != nil {
		return nil, err
	}
	s.db = db
	ok := false
	defer func() {
		if !ok {
			s.closeListeners()
			_ = db.Close()
			if sink != nil {
				_ = sink.Close()
			}
		}
	}()
	for _, name := range cfg.Services {
		u, err := s.newUnit(name)
		if err != nil {
			return nil, err
		}
		s.units = append(s.units, u)
	}
	s.wireNotifier()
	if cfg.Authorizer == nil {
		s.access, err = access.New(access.Config{ControlURL: cfg.ControlURL, ContainerID: cfg.ContainerID, ProjectID: cfg.ProjectID,
			Token: cfg.Token, TokenFile: cfg.TokenFile, ControlKey: cfg.ControlKey, InsecureControlURL: cfg.InsecureControlURL,
			PermissionsFile: cfg.PermissionsFile, Dir: filepath.Join(cfg.Data, "proxyperm"),
			Port: func(name string) int { return Port(cfg.PortBase, name) }, ActsFor: ActsFor(), ToolList: ToolList,
			Journal: cfg.Journal, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		cfg.Authorizer = s.access
		if s.access.Control() != nil {
			s.egress = newEgress(cfg)
		}
	}
	// A socket systemd passed (deckhand.socket) wins over --listen.
	if s.gwLn, err = platform.Listen("--listen", cfg.Listen); err != nil {
		return nil, err
	}
	s.idle = newIdleState(func() (int, int, time.Time) { return s.gw.Activity() }, s.activityReporters)
	s.gw = gateway.New(gateway.Config{
		Domain: cfg.Settings.Common.Domain, ProjectID: cfg.ProjectID, ContainerID: cfg.ContainerID,
		Known: Known(), Backend: s.backend, InProcess: s.inProcess, Status: http.HandlerFunc(s.serveStatus), Logger: s.log,
		Authorizer: cfg.Authorizer, ActsFor: ActsFor(), Policy: policy, TrustProxyHeaders: cfg.Settings.Common.TrustProxyHeaders,
		LocalTrust: trust, Claim: s.claimHandler(), Leases: s.idle.serveLeases, Identity: s.identityHandler(),
	})
	ok = true
	return s, nil
}

func (s *Supervisor) newUnit(name string) (*unit, error) {
	entry, found := Lookup(name)
	if !found {
		return nil, fmt.Errorf("service %q is not registered", name)
	}
	port := Port(s.cfg.PortBase, name)
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("--port-base %d: port %d of %s is out of range", s.cfg.PortBase, port, name)
	}
	u := &unit{
		name: name, entry: entry, sup: s, state: StateStarting,
		addr:    net.JoinHostPort(s.cfg.Bind, strconv.Itoa(port)),
		backoff: DefaultBackoff(),
		ready:   make(chan struct{}),
		log:     s.log.With("service", name),
	}
	bin, args, reason, child := s.childCommand(entry)
	if child {
		u.mode = ModeChild
		u.argv = append([]string{bin}, args...)
	} else {
		u.mode = ModeInProcess
		u.build = entry.constructor(reason)
		if reason != "" {
			u.log.Warn("service runs without its own binary", "reason", reason)
		}
	}
	// Bind now so a port conflict is a clear startup error. An in-process
	// service keeps this listener; a child binds the port itself.
	ln, err := net.Listen("tcp", u.addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen %s (--bind %s, --port-base %d + %d): %w", name, u.addr, s.cfg.Bind, s.cfg.PortBase, Offsets[name], err)
	}
	if u.mode == ModeChild {
		_ = ln.Close()
	} else {
		u.ln = ln
	}
	return u, nil
}

// childCommand decides whether a service runs as a child process, and how;
// reason says why its own binary is not running, if it has one. A child's
// settings travel in its environment (Settings.Env), never in its argv.
func (s *Supervisor) childCommand(e Entry) (bin string, args []string, reason string, ok bool) {
	addr := net.JoinHostPort(s.cfg.Bind, strconv.Itoa(Port(s.cfg.PortBase, e.Name)))
	bin, reason = e.external(s.cfg.Executable, s.cfg.Settings.Display())
	if bin != "" {
		return bin, []string{"--listen", addr, "--data", s.cfg.Data}, "", true
	}
	// A service with its own binary that cannot run (no display, not
	// installed) is served in-process by its stand-in, isolated or not: a
	// child process would only cost memory to say "unavailable".
	if s.cfg.Isolate[e.Name] && e.Binary == "" {
		args = []string{"service", e.Name, "--listen", addr, "--data", s.cfg.Data}
		return s.cfg.Executable, args, reason, true
	}
	return "", nil, reason, false
}

func (s *Supervisor) closeListeners() {
	for _, u := range s.units {
		if u.ln != nil {
			_ = u.ln.Close()
		}
	}
	if s.gwLn != nil {
		_ = s.gwLn.Close()
	}
}

// deps is what an in-process service gets: the same data directory and
// store file `deckhand service NAME` would open (contract.OpenServiceData),
// the agent's seams and the common settings. The caller closes the store.
func (s *Supervisor) deps(name string) (contract.ServiceDeps, error) {
	dir, db, err := contract.OpenServiceData(s.cfg.Data, name)
	if err != nil {
		return contract.ServiceDeps{}, err
	}
	return contract.ServiceDeps{
		Name: name, DataDir: dir, Store: db, Logger: s.log.With("service", name), Clock: clock.SystemClock{},
		Journal: s.cfg.Journal, Notifier: s.cfg.Notifier, Common: s.cfg.Settings.Common,
		Peers: s.peers, Offsets: Offsets,
	}, nil
}

// Run serves until ctx ends, then stops everything. It returns nil on a
// clean stop.
func (s *Supervisor) Run(ctx context.Context) error {
	s.started = time.Now()
	defer func() { _ = s.db.Close() }()
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var wg sync.WaitGroup
	s.startUnits(runCtx, &wg)
	if s.access != nil {
		wg.Go(func() { s.access.Run(runCtx) })
	}
	if s.egress != nil {
		// The last verified configuration is in force before the
		// services start; the rules go when the agent stops.
		sync := egress.NewSync(runCtx, s.egressSync())
		wg.Go(func() { sync.Run(runCtx) })
	}
	if s.access != nil && s.access.Control() != nil {
		wg.Go(func() { s.reportActivity(runCtx, s.access.Control()) })
	}
	if keys := s.newSSHKeySync(); keys != nil {
		wg.Go(func() { keys.run(runCtx) })
	}
	// servicesUp closes once every service has answered its first health
	// check.
	servicesUp := make(chan struct{})
	if srv := s.newSSHD(); srv != nil {
		// The SSH server (and its first start's host key) waits for the
		// services: a new container's first request should not share
		// its cores with ssh-keygen.
		wg.Go(func() {
			select {
			case <-servicesUp:
				srv.run(runCtx)
			case <-runCtx.Done():
			}
		})
	}
	wg.Go(func() { s.releaseIdleMemory(runCtx) })
	gwDone := make(chan error, 1)
	go func() { gwDone <- s.gw.Serve(s.gwLn) }()

	s.log.Info("gateway listening", "url", "http://"+s.gwLn.Addr().String(), "pid", os.Getpid(), "data", s.cfg.Data)
	for _, u := range s.units {
		s.log.Info("service", "service", u.name, "url", "http://"+u.addr, "mode", u.mode,
			"gateway_url", "http://"+s.gwLn.Addr().String()+"/_/"+u.name+"/")
	}

	ready := make(chan struct{})
	go func() {
		for _, u := range s.units {
			select {
			case <-u.ready:
			case <-ctx.Done():
				return
			}
		}
		close(ready)
	}()
	var watchdog <-chan time.Time
	if iv, err := daemon.SdWatchdogEnabled(false); err == nil && iv > 0 {
		t := time.NewTicker(iv / 2)
		defer t.Stop()
		watchdog = t.C
	}
	var gwErr error
loop:
	for {
		select {
		case <-ready:
			ready = nil
			close(servicesUp)
			_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)
			s.log.Info("all services healthy", "services", len(s.units), "startup_ms", time.Since(s.started).Milliseconds())
			s.printSummary()
			// Building hosts and OpenAPI documents leaves garbage the
			// runtime would keep resident for minutes; an idle agent
			// should not.
			debug.FreeOSMemory()
		case <-watchdog:
			_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		case gwErr = <-gwDone:
			s.log.Error("gateway stopped", "err", gwErr)
			break loop
		case <-ctx.Done():
			break loop
		}
	}

	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	s.log.Info("stopping")
	stopStart := time.Now()
	gctx, gcancel := context.WithTimeout(context.Background(), gatewayGrace)
	if err := s.gw.Shutdown(gctx); err != nil {
		_ = s.gw.Close()
	}
	gcancel()
	cancel() // every unit stops its service (in parallel) and returns
	wg.Wait()
	// A unit stopped before its turn to start still holds the listener
	// New made for it.
	s.closeListeners()
	if s.sink != nil {
		_ = s.sink.Close()
	}
	s.log.Info("stopped", "stop_ms", time.Since(stopStart).Milliseconds())
	if gwErr != nil && !errors.Is(gwErr, http.ErrServerClosed) {
		return fmt.Errorf("gateway: %w", gwErr)
	}
	return nil
}

// backend is the gateway's view of the running set.
func (s *Supervisor) backend(name string) (string, bool) {
	s.order.want(name)
	if u := s.unit(name); u != nil {
		return u.addr, true
	}
	return "", false
}

// unit is the unit of service name (nil: it does not run here).
func (s *Supervisor) unit(name string) *unit {
	for _, u := range s.units {
		if u.name == name {
			return u
		}
	}
	return nil
}

// inProcess is the handler the gateway calls for a service served in this
// process right now; nil for a child (--isolate), or while none serves.
func (s *Supervisor) inProcess(name string) *gateway.InProcess {
	if u := s.unit(name); u != nil {
		return u.direct.Load()
	}
	return nil
}

// GatewayAddr is where the gateway listens.
func (s *Supervisor) GatewayAddr() string { return s.gwLn.Addr().String() }

// journalSink is the journal every service and the supervisor write to:
// when the journal service runs (in-process or isolated), a Sink that
// buffers until it is up and delivers to it; otherwise the agent's log.
func journalSink(data string, services []string, log *slog.Logger) (contract.Journal, *journal.Sink) {
	if slices.Contains(services, "journal") {
		sink := journal.NewSink(journal.SinkConfig{Socket: journal.SocketPath(data), Logger: log})
		return sink, sink
	}
	return contract.LogJournal{Logger: log}, nil
}

// journalSocketEnv tells an isolated child where the journal takes
// entries (ServeOne reads it); absent when no journal runs.
const journalSocketEnv = "DECKHAND_JOURNAL_SOCKET"

func probeClient() *http.Client {
	return &http.Client{
		Timeout: time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 500 * time.Millisecond}).DialContext,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}

// printSummary tells whoever started the agent where everything is.
func (s *Supervisor) printSummary() {
	if s.cfg.Out == nil {
		return
	}
	gw := "http://" + s.gwLn.Addr().String()
	fmt.Fprintf(s.cfg.Out, "deckhand agent ready in %dms (pid %d, data %s)\n  gateway  %s\n",
		time.Since(s.started).Milliseconds(), os.Getpid(), s.cfg.Data, gw)
	for _, u := range s.units {
		u.mu.Lock()
		state := u.state
		u.mu.Unlock()
		fmt.Fprintf(s.cfg.Out, "  %-13s http://%s  (%s/_/%s/)  %s, %s\n", u.name, u.addr, gw, u.name, u.mode, state)
	}
}
