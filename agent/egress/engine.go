package egress

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"deckhand/platform/clock"
	"deckhand/platform/connlimit"
	"deckhand/platform/contract"
	"deckhand/platform/netconf"
)

// Source is the journal source of every egress entry.
const Source = "egress"

// DefaultMark is the socket mark of the agent's own outbound sockets (to
// the proxy, the DNS servers, direct destinations): the rules let marked
// packets out untouched.
const DefaultMark = 0x6465636b // "deck"

// Options are what the agent knows outside the configuration.
type Options struct {
	Journal contract.Journal
	Logger  *slog.Logger
	Clock   clock.Clock
	// Exempt are destinations every process reaches directly whatever the
	// configuration: the control plane's address and port.
	Exempt []netip.AddrPort
	// ExemptNames are names the resolver always answers (the control
	// plane's host), from the configured DNS servers, directly.
	ExemptNames []string
	// ProxyTLS is the TLS configuration for an https proxy (nil: system
	// roots, TLS 1.2 or newer).
	ProxyTLS *tls.Config
	// Mark is the agent's socket mark (default DefaultMark).
	Mark uint32
	// SniffWait overrides SniffWait.
	SniffWait time.Duration
}

// active is one configuration in force.
type active struct {
	c  *netconf.Compiled
	up Upstream // nil: TCP is not forwarded (block without an allow list)
}

// Engine enforces one container network configuration in the network
// namespace it runs in: nftables rules, the forwarder and the resolver.
// Apply changes what is in force (and alone removes the rules); Close
// stops serving and leaves them.
type Engine struct {
	opt   Options
	base  *net.Dialer // marked
	names *names
	cur   atomic.Pointer[active]

	mu        sync.Mutex // Apply, Close, Check
	started   bool
	closed    bool
	fwd       []net.Listener
	dns       []io.Closer
	fwdPort   uint16
	dnsPort   uint16
	v6        bool
	installed bool

	// fwdLimit caps forwarded connections in total and per local user;
	// dnsLimit the resolver's TCP connections.
	fwdLimit, dnsLimit connlimit.Limit
	warns              connlimit.Every

	conns   sync.WaitGroup
	connMu  sync.Mutex
	open    map[net.Conn]struct{}
	stopped chan struct{}

	allowed, denied atomic.Uint64
	stMu            sync.Mutex
	st              netconf.Status
	recent          []netconf.Decision
}

// New makes an engine; nothing is enforced before Apply.
func New(opt Options) *Engine {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Journal == nil {
		opt.Journal = contract.LogJournal{Logger: opt.Logger}
	}
	if opt.Clock == nil {
		opt.Clock = clock.SystemClock{}
	}
	opt.Mark = cmp.Or(opt.Mark, DefaultMark)
	if opt.SniffWait <= 0 {
		opt.SniffWait = SniffWait
	}
	e := &Engine{opt: opt, names: newNames(), open: map[net.Conn]struct{}{}, stopped: make(chan struct{})}
	// Each forwarded connection holds two sockets and, while spliced,
	// two pipes: a quarter of the descriptors at most, half of that for
	// one user.
	e.fwdLimit.Total = connlimit.Share(4, 6, 32)
	e.fwdLimit.PerKey = max(e.fwdLimit.Total/2, 16)
	e.dnsLimit.Total = connlimit.Share(16, 2, 32)
	e.base = &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second, Control: markControl(opt.Mark)}
	e.st.Enforceable = true
	return e
}

// Enforceable reports whether the agent can put rules in place here
// (CAP_NET_ADMIN, nf_tables).
func (e *Engine) Enforceable() bool { return notEnforceable() == "" }

// ErrNotEnforceable is an Apply that cannot put rules in place; the
// status says why.
var ErrNotEnforceable = errors.New("egress: not enforceable")

// Apply puts c in force: nil (no configuration) or a stopped one removes
// the rules. A configuration that cannot be enforced leaves no rule and
// reports why (never pretends).
func (e *Engine) Apply(ctx context.Context, c *netconf.Compiled) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("egress: engine closed")
	}
	var version int64
	if c != nil {
		version = c.Doc.Version
	}
	if c == nil || !c.Doc.Running {
		err := e.remove()
		e.setStatus(func(s *netconf.Status) {
			s.IsRunning, s.Version, s.ProxyReachable = false, version, nil
			s.Error = errString(err)
		})
		if err == nil && e.installed {
			e.installed = false
		}
		return err
	}
	if reason := notEnforceable(); reason != "" {
		_ = e.remove()
		e.setStatus(func(s *netconf.Status) {
			s.IsRunning, s.Enforceable, s.Reason, s.Version = false, false, reason, version
		})
		e.journal("error", "egress rules not enforceable: "+reason, map[string]any{"version": version})
		return fmt.Errorf("%w: %s", ErrNotEnforceable, reason)
	}
	if err := e.start(); err != nil {
		e.setStatus(func(s *netconf.Status) { s.IsRunning, s.Error, s.Version = false, err.Error(), version })
		return err
	}
	a := &active{c: c}
	if c.Proxy != nil || !c.Lists.Allow.Empty() {
		up, err := newUpstream(c, e.base, e.opt.ProxyTLS)
		if err != nil {
			return err
		}
		a.up = up
	}
	e.cur.Store(a)
	if err := installRules(e.spec(a)); err != nil {
		e.cur.Store(nil)
		_ = e.remove()
		e.setStatus(func(s *netconf.Status) { s.IsRunning, s.Error, s.Version = false, err.Error(), version })
		e.journal("error", "egress rules not installed", map[string]any{"error": err.Error(), "version": version})
		return err
	}
	e.installed = true
	now := e.opt.Clock.Now()
	e.setStatus(func(s *netconf.Status) {
		s.IsRunning, s.Enforceable, s.Reason, s.Error, s.Version, s.LastCheck = true, true, "", "", version, &now
	})
	fields := map[string]any{"type": c.Doc.Type, "version": version, "dns_servers": c.Doc.DNSServers,
		"allow": len(c.Doc.Allow), "deny": len(c.Doc.Deny)}
	if a.up != nil && a.up.Via() != "" {
		fields["proxy"] = a.up.Via()
	}
	e.journal("info", "egress rules in force", fields)
	return nil
}

func (e *Engine) spec(a *active) ruleSpec {
	return ruleSpec{mark: e.opt.Mark, uid: uint32(os.Geteuid()), dnsPort: e.dnsPort, fwdPort: e.fwdPort, redirectTCP: a.up != nil, v6: e.v6, exempt: e.opt.Exempt}
}

// SetExempt changes the destinations reached directly (the control
// plane's addresses); rules in force are replaced at once.
func (e *Engine) SetExempt(exempt []netip.AddrPort) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if slices.Equal(exempt, e.opt.Exempt) || e.closed {
		return
	}
	e.opt.Exempt = exempt
	a := e.cur.Load()
	if !e.installed || a == nil {
		return
	}
	if err := installRules(e.spec(a)); err != nil {
		e.journal("error", "egress rules not replaced for the control plane's new address", map[string]any{"error": err.Error()})
	}
}

// remove takes the rules out (the listeners stay: they only serve
// loopback).
func (e *Engine) remove() error {
	e.cur.Store(nil)
	if !e.started && !e.installed {
		// Rules a crashed agent left are taken out all the same.
		if present, _, err := rulesPresent(); err != nil || !present {
			return nil
		}
	}
	if err := removeRules(); err != nil {
		return err
	}
	if e.installed {
		e.journal("info", "egress rules removed", nil)
	}
	e.installed = false
	return nil
}

// start opens the forwarder and resolver listeners once.
func (e *Engine) start() error {
	if e.started {
		return nil
	}
	fwd4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("egress: forwarder: %w", err)
	}
	e.fwdPort = uint16(fwd4.Addr().(*net.TCPAddr).Port)
	e.fwd = append(e.fwd, fwd4)
	if fwd6, err := net.Listen("tcp6", "[::1]:"+strconv.Itoa(int(e.fwdPort))); err == nil {
		e.fwd = append(e.fwd, fwd6)
		e.v6 = true
	}
	if err := e.startResolver(); err != nil {
		for _, l := range e.fwd {
			l.Close()
		}
		e.fwd = nil
		return err
	}
	for _, l := range e.fwd {
		e.conns.Go(func() { e.acceptLoop(l) })
	}
	e.started = true
	return nil
}

// Close stops the forwarder and resolver, closing what they still carry.
// The rules stay: with the agent gone, egress stays closed (redirected
// TCP and DNS find nothing listening) until an agent puts its
// configuration in force again or a stopped or deleted configuration
// takes them out (Apply). Whatever ends the agent (an error, a signal,
// a flood that exhausts its descriptors) can therefore never open egress.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.cur.Store(nil)
	if e.installed {
		e.journal("info", "egress rules left in force while the agent is stopped", nil)
	}
	close(e.stopped)
	for _, l := range e.fwd {
		l.Close()
	}
	for _, s := range e.dns {
		s.Close()
	}
	e.connMu.Lock()
	for c := range e.open {
		c.Close()
	}
	e.connMu.Unlock()
	e.mu.Unlock()
	e.conns.Wait()
	return nil
}

// Check verifies what runs: the rules are in the kernel and the proxy
// answers a TCP connect. It updates and returns the status.
func (e *Engine) Check(ctx context.Context) netconf.Status {
	e.mu.Lock()
	present, dropped, err := rulesPresent()
	a := e.cur.Load()
	installed := e.installed
	e.mu.Unlock()
	var reach *bool
	var reachErr string
	if a != nil && a.up != nil && a.up.Via() != "" {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, derr := e.base.DialContext(cctx, "tcp", a.up.Via())
		cancel()
		ok := derr == nil
		if ok {
			c.Close()
		} else {
			reachErr = "proxy " + a.up.Via() + " unreachable: " + derr.Error()
		}
		reach = &ok
	}
	now := e.opt.Clock.Now()
	e.setStatus(func(s *netconf.Status) {
		s.LastCheck = &now
		s.Dropped = dropped
		s.ProxyReachable = reach
		switch {
		case err != nil && s.Enforceable:
			s.IsRunning = false
			s.Error = "read the rules: " + err.Error()
		case installed && !present:
			s.IsRunning = false
			s.Error = "the rules were removed from the kernel by something other than the agent"
		case installed:
			s.IsRunning = true
			s.Error = reachErr
		default:
			s.IsRunning = false
		}
	})
	return e.Status()
}

// Status is the engine's state with the counts and newest decisions.
func (e *Engine) Status() netconf.Status {
	e.stMu.Lock()
	defer e.stMu.Unlock()
	s := e.st
	s.Allowed, s.Denied = e.allowed.Load(), e.denied.Load()
	s.Recent = append(make([]netconf.Decision, 0, len(e.recent)), e.recent...)
	slices.Reverse(s.Recent)
	return s
}

func (e *Engine) setStatus(f func(*netconf.Status)) {
	e.stMu.Lock()
	defer e.stMu.Unlock()
	f(&e.st)
}

// warnEvery journals msg at most every 10 s: a flood is one entry.
func (e *Engine) warnEvery(msg string, fields map[string]any) {
	if e.warns.Allow(e.opt.Clock.Now()) {
		e.journal("warn", msg, fields)
	}
}

func (e *Engine) journal(level, msg string, fields map[string]any) {
	e.opt.Journal.Record(contract.JournalEntry{Time: e.opt.Clock.Now(), Source: Source, Level: level, Message: msg, Fields: fields})
}

// decide records one decision in the journal and the recent list: the
// destination, the name, the proxy, the reason; never a payload.
func (e *Engine) decide(d netconf.Decision) {
	d.Time = e.opt.Clock.Now()
	level := "info"
	if d.Outcome == netconf.OutcomeDenied {
		level = "warn"
		e.denied.Add(1)
	} else {
		e.allowed.Add(1)
	}
	fields := map[string]any{"outcome": d.Outcome, "protocol": d.Protocol, "destination": d.Destination}
	if d.Name != "" {
		fields["name"] = d.Name
	}
	if d.Via != "" {
		fields["via"] = d.Via
	}
	if d.Reason != "" {
		fields["reason"] = d.Reason
	}
	e.journal(level, "egress "+d.Outcome, fields)
	e.stMu.Lock()
	if len(e.recent) >= netconf.MaxRecent {
		e.recent = slices.Delete(e.recent, 0, 1)
	}
	e.recent = append(e.recent, d)
	e.stMu.Unlock()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (e *Engine) track(c net.Conn) bool {
	e.connMu.Lock()
	defer e.connMu.Unlock()
	select {
	case <-e.stopped:
		return false
	default:
	}
	e.open[c] = struct{}{}
	return true
}

func (e *Engine) untrack(c net.Conn) {
	e.connMu.Lock()
	delete(e.open, c)
	e.connMu.Unlock()
}
