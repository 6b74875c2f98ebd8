// Package tunnel owns reaching the container's own TCP servers from outside:
// the listening ports (bindings, discovered from /proc/net/tcp and tcp6 and
// pushed to the notifier as they open and close), a WebSocket that bridges
// one client connection to one local port (the `deckhand tunnel` client
// forwards a laptop port through it, like ssh -L), an HTTP reverse proxy to
// a local port at /proxy/{port}/ (WebSocket upgrades pass, so dev-server hot
// reload works), the sessions in flight (listed, cut) and Prometheus
// metrics.
//
// Hot path: a bridged session is two goroutines, each copying in 64 KiB
// chunks (TCP reads become single binary frames; frames are copied into the
// socket without buffering whole messages). Byte counters are atomics on the
// session and per-session Prometheus counters resolved once.
package tunnel

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httputil"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// Error codes of this service.
const (
	// CodeUpstreamUnreachable: nothing accepted a connection on the port.
	CodeUpstreamUnreachable = "UPSTREAM_UNREACHABLE"
	// CodePortDenied: the port is on the deny list (the agent's own ports).
	CodePortDenied = "PORT_DENIED"
)

func init() {
	fault.RegisterCode(CodeUpstreamUnreachable, http.StatusBadGateway)
	fault.RegisterCode(CodePortDenied, http.StatusForbidden)
}

// agentSpan is how many ports from the port base the agent uses: the
// gateway (+0) and services +1..+16 (docs/spec/operations.md). `deckhand run` also
// names every port its registry uses in --tunnel-agent-ports, so a service
// added past +16 is denied as well.
const agentSpan = 17

// Settings are the tunnel service's flags (DECKHAND_TUNNEL_*).
type Settings struct {
	// PortBase is the agent's --port-base: ports base..base+16 (the gateway
	// and every service) are denied unless AllowPorts lists them. `deckhand
	// run` and `deckhand service` fill it from their own --port-base.
	PortBase int
	// AgentPorts are the agent's other ports (its gateway's --listen, a
	// control plane's on loopback, services past the base range), denied
	// like the base range. `deckhand run` fills it from its registry and
	// flags.
	AgentPorts string
	// AllowPorts are agent ports that may be tunnelled nonetheless.
	AllowPorts string
	// DenyPorts are further ports that may not be tunnelled.
	DenyPorts string
	// IgnorePorts are neither listed as bindings nor notified.
	IgnorePorts string
	// ScanInterval is how often /proc/net/tcp{,6} is read.
	ScanInterval time.Duration
	// DialTimeout bounds connecting to a local port.
	DialTimeout time.Duration
	// PingInterval between WebSocket pings; a peer silent for two is cut.
	PingInterval time.Duration
}

// Flags declares --tunnel-port-base, --tunnel-allow-ports, ...
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.IntVar(&s.PortBase, "tunnel-port-base", 7700, "the agent's port base: its ports (base..base+16) may not be tunnelled (set from --port-base)")
	fs.StringVar(&s.AgentPorts, "tunnel-agent-ports", "", "comma list of the agent's further ports or ranges that may not be tunnelled (set by deckhand run: every service port, the gateway's, a loopback control plane's)")
	fs.StringVar(&s.AllowPorts, "tunnel-allow-ports", "", "comma list of agent ports or ranges (7702,7710-7711) that may be tunnelled nonetheless")
	fs.StringVar(&s.DenyPorts, "tunnel-deny-ports", "", "comma list of further ports or ranges that may not be tunnelled")
	fs.StringVar(&s.IgnorePorts, "tunnel-ignore-ports", "", "comma list of ports or ranges left out of the bindings and their events")
	fs.DurationVar(&s.ScanInterval, "tunnel-scan-interval", 250*time.Millisecond, "how often listening ports are read from /proc/net/tcp{,6}")
	fs.DurationVar(&s.DialTimeout, "tunnel-dial-timeout", 3*time.Second, "time to connect to a local port")
	fs.DurationVar(&s.PingInterval, "tunnel-ping-interval", 15*time.Second, "WebSocket ping interval (a peer silent for two is cut)")
}

// Validate checks the lists and bounds.
func (s *Settings) Validate() error {
	_, err := s.policy()
	return err
}

func (s *Settings) policy() (*portPolicy, error) {
	if s.PortBase < 0 || s.PortBase+agentSpan-1 > 65535 {
		return nil, fmt.Errorf("--tunnel-port-base: must be between 0 and %d", 65535-agentSpan+1)
	}
	if s.ScanInterval <= 0 || s.ScanInterval > time.Second {
		return nil, fmt.Errorf("--tunnel-scan-interval: must be positive and at most 1s (an opened port shows within 1 s)")
	}
	if s.DialTimeout <= 0 {
		return nil, fmt.Errorf("--tunnel-dial-timeout: must be positive")
	}
	if s.PingInterval <= 0 {
		return nil, fmt.Errorf("--tunnel-ping-interval: must be positive")
	}
	p := &portPolicy{base: s.PortBase}
	var err error
	if p.agent, err = parsePorts("--tunnel-agent-ports", s.AgentPorts); err != nil {
		return nil, err
	}
	if p.allow, err = parsePorts("--tunnel-allow-ports", s.AllowPorts); err != nil {
		return nil, err
	}
	if p.deny, err = parsePorts("--tunnel-deny-ports", s.DenyPorts); err != nil {
		return nil, err
	}
	if p.ignore, err = parsePorts("--tunnel-ignore-ports", s.IgnorePorts); err != nil {
		return nil, err
	}
	return p, nil
}

// DefaultSettings are the flags' defaults.
func DefaultSettings() *Settings {
	s := &Settings{}
	s.Flags(pflag.NewFlagSet("tunnel", pflag.ContinueOnError))
	return s
}

// portRange is an inclusive range of ports.
type portRange struct{ lo, hi int }

type portSet []portRange

func (ps portSet) has(p int) bool {
	for _, r := range ps {
		if p >= r.lo && p <= r.hi {
			return true
		}
	}
	return false
}

// parsePorts reads "22,8000-8010".
func parsePorts(flag, list string) (portSet, error) {
	var out portSet
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(f, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
			return nil, fmt.Errorf("%s: %q is not a port (1-65535) or a range of them (LOW-HIGH)", flag, f)
		}
		out = append(out, portRange{a, b})
	}
	return out, nil
}

// portPolicy says which ports may be tunnelled and which are listed.
type portPolicy struct {
	base                       int
	agent, allow, deny, ignore portSet
}

// denied says why port may not be tunnelled ("" when it may).
func (p *portPolicy) denied(port int) string {
	if p.deny.has(port) {
		return "on the deny list (--tunnel-deny-ports)"
	}
	if (port >= p.base && port < p.base+agentSpan || p.agent.has(port)) && !p.allow.has(port) {
		return "one of the agent's own ports (--tunnel-port-base, --tunnel-agent-ports; allow with --tunnel-allow-ports)"
	}
	return ""
}

// Service is the tunnel service.
type Service struct {
	deps    contract.ServiceDeps
	set     Settings
	policy  *portPolicy
	log     *slog.Logger
	metrics *metrics
	scanner *scanner
	proxy   *httputil.ReverseProxy

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
	wg       sync.WaitGroup
}

// New builds the service and starts watching the listening ports. A nil
// set takes the defaults.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = DefaultSettings()
	}
	pol, err := set.policy()
	if err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	s := &Service{deps: deps, set: *set, policy: pol, log: deps.Logger, metrics: newMetrics(),
		sessions: map[string]*session{}}
	s.proxy = s.newProxy()
	s.scanner = newScanner(s, set.ScanInterval)
	s.metrics.collectBindings(s.scanner)
	s.scanner.start()
	return s, nil
}

// Close stops discovery and cuts every session.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	all := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()
	s.scanner.stop()
	for _, ss := range all {
		ss.cut("service stopping")
	}
	s.wg.Wait()
	return nil
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{Name: "tunnel", Title: "deckhand tunnel service", Version: platform.Version,
		Description: "The container's listening TCP ports, WebSocket tunnels to them (the `deckhand tunnel` client " +
			"forwards a local port like ssh -L), an HTTP reverse proxy at /proxy/{port}/, the sessions in flight and " +
			"Prometheus metrics. Errors are {\"code\",\"details\",\"message\"}."}
}

// checkPort applies the deny list to a port already within 1-65535.
func (s *Service) checkPort(port int) error {
	if why := s.policy.denied(port); why != "" {
		s.metrics.denied.Inc()
		return &fault.Error{Code: CodePortDenied, Field: "port", Details: "port",
			Message: fmt.Sprintf("port: %d may not be tunnelled: %s", port, why)}
	}
	return nil
}

// checkAdmitted holds a request the agent's gateway admitted to the port
// its proxy permissions judged (platform.AuthorizedPortHeader): whatever
// the path or query made of it on the way, no other port is dialled. The
// gateway drops any copy a client sends; without the header no document
// decided (a trusted local caller).
func (s *Service) checkAdmitted(r *http.Request, port int) error {
	v := r.Header.Get(platform.AuthorizedPortHeader)
	if v == "" || v == strconv.Itoa(port) {
		return nil
	}
	s.metrics.denied.Inc()
	return &fault.Error{Code: CodePortDenied, Field: "port", Details: "port",
		Message: fmt.Sprintf("port: %d was not the port the gateway's proxy permissions admitted", port)}
}
