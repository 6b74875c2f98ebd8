package tunnel

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/procnet"
)

// Binding is one TCP port something listens on inside the container.
type Binding struct {
	Port int `json:"port"`
	// Addresses are the local addresses listened on (0.0.0.0, ::, 127.0.0.1 ...).
	Addresses []string `json:"addresses"`
	// PID and Program of the listening process, when this service may see it
	// (another user's process hides its sockets unless the agent is root).
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
	// Exposed says the tunnel and the proxy forward to this port; Reason
	// says why not (deny list, agent port, bound to an address the service
	// cannot reach).
	Exposed bool      `json:"exposed"`
	Reason  string    `json:"reason,omitempty"`
	Since   time.Time `json:"since" doc:"when this service first saw it listening"`
}

// BindingList is the answer of GET /api/v1/tunnel/bindings.
type BindingList struct {
	Bindings []Binding `json:"bindings"`
}

// listener is one listening socket read from /proc/net/tcp{,6}.
type listener struct {
	port  int
	addr  net.IP
	inode uint64
}

// listeningSockets reads the sockets in state LISTEN of this network
// namespace (platform/procnet).
func listeningSockets() ([]listener, error) {
	socks, err := procnet.Listening()
	if err != nil {
		return nil, err
	}
	out := make([]listener, 0, len(socks))
	for _, s := range socks {
		out = append(out, listener{port: int(s.Local.Port()), addr: net.IP(s.Local.Addr().AsSlice()), inode: s.Inode})
	}
	return out, nil
}

// scanner keeps the listening ports current and reports changes.
type scanner struct {
	svc      *Service
	interval time.Duration

	mu     sync.Mutex
	ports  map[int]*Binding
	owners map[uint64]owner // socket inode → process, cached between scans
	ready  chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

type owner struct {
	pid     int
	program string
}

func newScanner(svc *Service, interval time.Duration) *scanner {
	return &scanner{svc: svc, interval: interval, ports: map[int]*Binding{}, owners: map[uint64]owner{},
		ready: make(chan struct{}), done: make(chan struct{})}
}

func (sc *scanner) start() {
	ctx, cancel := context.WithCancel(context.Background())
	sc.cancel = cancel
	go sc.loop(ctx)
}

func (sc *scanner) stop() {
	sc.cancel()
	<-sc.done
}

func (sc *scanner) loop(ctx context.Context) {
	defer close(sc.done)
	sc.scan(false)
	close(sc.ready)
	t := time.NewTicker(sc.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sc.scan(true)
		}
	}
}

// scan reads the listening sockets and, when notify, reports ports that
// opened or closed since the last scan (the first scan is the baseline).
func (sc *scanner) scan(notify bool) {
	ls, err := listeningSockets()
	if err != nil {
		sc.svc.log.Warn("tunnel: reading listening sockets", "err", err)
		return
	}
	now := sc.svc.deps.Clock.Now()
	byPort := map[int][]listener{}
	for _, l := range ls {
		if sc.svc.policy.ignore.has(l.port) {
			continue
		}
		byPort[l.port] = append(byPort[l.port], l)
	}
	// Resolve owners only for sockets not seen before: walking /proc/*/fd
	// is the expensive part, and a steady set of ports needs none of it.
	var unknown []uint64
	sc.mu.Lock()
	live := map[uint64]bool{}
	for _, l := range ls {
		live[l.inode] = true
		if _, ok := sc.owners[l.inode]; !ok && l.inode != 0 {
			unknown = append(unknown, l.inode)
		}
	}
	for ino := range sc.owners {
		if !live[ino] {
			delete(sc.owners, ino)
		}
	}
	sc.mu.Unlock()
	found := map[uint64]owner{}
	if len(unknown) > 0 {
		found = socketOwners(unknown)
	}

	var opened, closed []Binding
	var newPorts []int
	sc.mu.Lock()
	for _, ino := range unknown {
		sc.owners[ino] = found[ino] // zero when hidden: not looked up again
	}
	for port, socks := range byPort {
		b := sc.ports[port]
		if b == nil {
			b = &Binding{Port: port, Since: now}
			sc.ports[port] = b
			newPorts = append(newPorts, port)
		}
		b.Addresses = b.Addresses[:0]
		b.PID, b.Program = 0, ""
		seen := map[string]bool{}
		for _, l := range socks {
			a := l.addr.String()
			if !seen[a] {
				seen[a] = true
				b.Addresses = append(b.Addresses, a)
			}
			if o := sc.owners[l.inode]; o.pid != 0 && b.PID == 0 {
				b.PID, b.Program = o.pid, o.program
			}
		}
		sort.Strings(b.Addresses)
		b.Exposed, b.Reason = true, ""
		if why := sc.svc.policy.denied(port); why != "" {
			b.Exposed, b.Reason = false, why
		} else if _, ok := dialAddress(b.Addresses); !ok {
			b.Exposed, b.Reason = false, "listens only on addresses this service cannot reach"
		}
	}
	for _, port := range newPorts {
		b := *sc.ports[port]
		b.Addresses = append([]string(nil), b.Addresses...)
		opened = append(opened, b)
	}
	for port, b := range sc.ports {
		if _, ok := byPort[port]; !ok {
			closed = append(closed, *b)
			delete(sc.ports, port)
		}
	}
	sc.mu.Unlock()
	if !notify {
		return
	}
	for _, b := range opened {
		sc.notify(contract.EventPortOpened, fmt.Sprintf("Port %d opened", b.Port), b)
	}
	for _, b := range closed {
		sc.notify(contract.EventPortClosed, fmt.Sprintf("Port %d closed", b.Port), b)
	}
}

func (sc *scanner) notify(kind, title string, b Binding) {
	data := map[string]any{"port": b.Port, "addresses": b.Addresses, "exposed": b.Exposed}
	body := "listening on " + joinAddrs(b.Addresses, b.Port)
	if b.PID != 0 {
		data["pid"], data["program"] = b.PID, b.Program
		body += " by " + b.Program + " (pid " + strconv.Itoa(b.PID) + ")"
	}
	if kind == contract.EventPortClosed {
		body = "no longer listening on " + joinAddrs(b.Addresses, b.Port)
	}
	sc.svc.deps.Notifier.Notify(contract.Event{Time: sc.svc.deps.Clock.Now(), Kind: kind, Source: "tunnel",
		Level: "info", Title: title, Body: body, Data: data})
}

func joinAddrs(addrs []string, port int) string {
	s := ""
	for i, a := range addrs {
		if i > 0 {
			s += ", "
		}
		s += net.JoinHostPort(a, strconv.Itoa(port))
	}
	return s
}

// list is the current bindings by port.
func (sc *scanner) list() []Binding {
	<-sc.ready
	sc.mu.Lock()
	defer sc.mu.Unlock()
	out := make([]Binding, 0, len(sc.ports))
	for _, b := range sc.ports {
		c := *b
		c.Addresses = append([]string(nil), b.Addresses...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// count is the number of listening ports (for the metrics gauge).
func (sc *scanner) count() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.ports)
}

// target is the address to dial for port: the loopback address of the
// family it listens on, or the one address it is bound to; 127.0.0.1 when
// the port is not (yet) seen listening, so the dial itself answers.
func (sc *scanner) target(port int) []string {
	sc.mu.Lock()
	b := sc.ports[port]
	var addrs []string
	if b != nil {
		addrs = append(addrs, b.Addresses...)
	}
	sc.mu.Unlock()
	host, ok := dialAddress(addrs)
	if !ok {
		host = "127.0.0.1"
	}
	out := []string{net.JoinHostPort(host, strconv.Itoa(port))}
	if host == "::1" && slices.ContainsFunc(addrs, func(a string) bool { return net.ParseIP(a).Equal(net.IPv6unspecified) }) {
		// A server on :: takes IPv4 too unless it is IPv6-only, and a
		// container may have no IPv6 loopback at all (Docker's default):
		// ::1 first, then 127.0.0.1.
		out = append(out, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	return out
}

// dialAddress picks the host to reach a port listening on addrs.
func dialAddress(addrs []string) (string, bool) {
	if len(addrs) == 0 {
		return "127.0.0.1", true
	}
	var v6 bool
	for _, a := range addrs {
		ip := net.ParseIP(a)
		switch {
		case ip == nil:
		case ip.Equal(net.IPv4zero), ip.Equal(net.IPv4(127, 0, 0, 1)):
			return "127.0.0.1", true
		case ip.Equal(net.IPv6unspecified), ip.Equal(net.IPv6loopback):
			v6 = true
		}
	}
	if v6 {
		return "::1", true
	}
	for _, a := range addrs {
		// Never link-local (169.254.0.0/16, fe80::/10: cloud metadata
		// and the like), whatever a document allows.
		if ip := net.ParseIP(a); ip != nil && !ip.IsLinkLocalUnicast() && (ip.IsLoopback() || ip.IsPrivate() || ip.IsGlobalUnicast()) {
			return a, true
		}
	}
	return "", false
}
