package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"deckhand/platform/fault"
)

// egress is where a source sync may connect. A source URL is written by
// whoever may call the run service, and the sync runs inside the agent: a
// URL naming this machine would let that caller send requests to the
// agent's own ports and every other service listening here (a blind
// SSRF). So a sync never reaches loopback, unspecified, link-local
// (cloud metadata lives there) or any address of this machine's
// interfaces, unless --run-allow-hosts names the host or address.
// Private ranges stay reachable: company git servers live there.
//
// Names are judged by what they resolve to at connect time (the dialer's
// Control hook for archives; for git one resolution that git is then held
// to), so a name that resolves elsewhere at check time and here at fetch
// time (DNS rebinding) gets nowhere.
type egress struct {
	names map[string]bool // host names allowed whatever they resolve to
	nets  []netip.Prefix  // addresses allowed although refused by class
	// ownAddrs lists this machine's interface addresses.
	ownAddrs func() ([]netip.Addr, error)
}

func newEgress(allow []string) (*egress, error) {
	e := &egress{names: map[string]bool{}, ownAddrs: interfaceAddrs}
	for _, raw := range allow {
		a := strings.TrimSpace(raw)
		switch {
		case a == "":
			continue
		case strings.Contains(a, "/"):
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fault.Invalid("--run-allow-hosts", "%q is not a CIDR range", a)
			}
			e.nets = append(e.nets, p.Masked())
		default:
			if ip, err := netip.ParseAddr(a); err == nil {
				ip = ip.Unmap()
				e.nets = append(e.nets, netip.PrefixFrom(ip, ip.BitLen()))
				continue
			}
			name := normalName(a)
			if !validHostName(name) {
				return nil, fault.Invalid("--run-allow-hosts", "%q is not a host name, IP address or CIDR range", a)
			}
			e.names[name] = true
		}
	}
	return e, nil
}

func normalName(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func interfaceAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// refusedRule is the rule every refusal names.
const refusedRule = "a source may not reach loopback, link-local or this machine's own addresses (allow a host with --run-allow-hosts)"

// why is "" when a sync may connect to ip, else what the address is.
func (e *egress) why(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, p := range e.nets {
		if p.Contains(ip) {
			return ""
		}
	}
	switch {
	case !ip.IsValid():
		return "not an address"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified():
		return "the unspecified address (this machine)"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "link-local"
	}
	own, err := e.ownAddrs()
	if err != nil {
		return "unchecked: this machine's addresses cannot be read"
	}
	for _, a := range own {
		if a == ip {
			return "an address of this machine"
		}
	}
	return ""
}

// addrError is a refusal for the url field.
func addrError(host string, ip netip.Addr, why string) *fault.Error {
	shown := ip.String()
	if host != "" && host != shown {
		shown = host + " (" + shown + ")"
	}
	return fault.Invalid("url", "%s is %s: %s", shown, why, refusedRule)
}

// checkHost judges a URL's host before anything is stored or fetched:
// a literal address by its class, localhost names as loopback. Other
// names are judged when a sync resolves them.
func (e *egress) checkHost(host string) error {
	if host == "" {
		return nil
	}
	name := normalName(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if e.names[name] {
		return nil
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		if why := e.why(ip); why != "" {
			return addrError("", ip, why)
		}
		return nil
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761 6.3: always loopback, whatever a resolver says.
		return addrError(name, netip.IPv6Loopback(), "loopback")
	}
	return nil
}

// resolve finds host's addresses and refuses the lot when any of them is
// refused (a name announcing a public address beside a loopback one is
// not trusted to pick). The first address is the one to connect to.
func (e *egress) resolve(ctx context.Context, host string) (netip.Addr, error) {
	name := normalName(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err := e.checkHost(name); err != nil {
		return netip.Addr{}, err
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		return ip.Unmap(), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("resolve %s: %w", name, err)
	}
	if len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("resolve %s: no address", name)
	}
	if e.names[name] {
		return addrs[0].Unmap(), nil
	}
	for _, ip := range addrs {
		if why := e.why(ip); why != "" {
			return netip.Addr{}, addrError(name, ip.Unmap(), why)
		}
	}
	return addrs[0].Unmap(), nil
}

// httpClient downloads archives: every connection it opens, redirects and
// a proxy from the environment included, is judged by the address it is
// about to connect to, after resolution.
func (e *egress) httpClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = e.dialContext
	return &http.Client{Transport: tr}
}

func (e *egress) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !e.names[normalName(host)] {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			if why := e.why(ap.Addr()); why != "" {
				return plain(addrError(host, ap.Addr().Unmap(), why))
			}
			return nil
		}
	}
	return d.DialContext(ctx, network, addr)
}

// gitTarget is where a git URL connects: its scheme (https, http, ssh,
// git; "" for a local path or file://), host and port ("" for the
// scheme's default).
type gitTarget struct{ scheme, host, port string }

func parseGitURL(raw string) gitTarget {
	if u, err := url.Parse(raw); err == nil && len(u.Scheme) > 1 {
		if u.Scheme == "file" {
			return gitTarget{}
		}
		return gitTarget{scheme: u.Scheme, host: u.Hostname(), port: u.Port()}
	}
	if strings.HasPrefix(raw, "/") {
		return gitTarget{}
	}
	// scp-like [user@]host:path or [user@][host]:path; git reads a path so
	// only when a ':' comes before any '/'.
	rest := raw
	if i := strings.IndexByte(rest, '@'); i >= 0 && !strings.ContainsAny(rest[:i], "/:[") {
		rest = rest[i+1:]
	}
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 || end+1 >= len(rest) || rest[end+1] != ':' {
			return gitTarget{}
		}
		return gitTarget{scheme: "ssh", host: rest[1:end]}
	}
	colon, slash := strings.IndexByte(rest, ':'), strings.IndexByte(rest, '/')
	if colon < 0 || (slash >= 0 && slash < colon) {
		return gitTarget{}
	}
	return gitTarget{scheme: "ssh", host: rest[:colon]}
}

// gitPins resolves a git URL's host once, refuses it as a download would
// be refused, and answers the git options and environment that hold git
// to the checked address: curl's resolve list for http(s), ssh's HostName
// (HostKeyAlias keeps known_hosts keyed by the name), a rewritten URL for
// git://. Redirects are not followed: they could lead anywhere.
func (e *egress) gitPins(ctx context.Context, raw string) (opts []string, env []string, err error) {
	t := parseGitURL(raw)
	if t.scheme == "" {
		return nil, nil, nil
	}
	// The name goes into git's options and ssh's command line: only a
	// plain host name or an address gets that far.
	if _, err := netip.ParseAddr(t.host); err != nil && !validHostName(normalName(t.host)) {
		return nil, nil, fault.Invalid("url", "host %q must be a host name or an IP address", t.host)
	}
	ip, err := e.resolve(ctx, t.host)
	if err != nil {
		return nil, nil, plain(err)
	}
	opts = []string{"-c", "http.followRedirects=false"}
	if e.names[normalName(t.host)] {
		return opts, nil, nil
	}
	if _, err := netip.ParseAddr(t.host); err == nil {
		return opts, nil, nil // a literal: nothing to resolve again
	}
	switch t.scheme {
	case "http", "https":
		port := cmp.Or(t.port, map[string]string{"http": "80", "https": "443"}[t.scheme])
		opts = append(opts, "-c", "http.curloptResolve="+t.host+":"+port+":"+ipForCurl(ip))
	case "ssh":
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes -o HostName="+ip.String()+" -o HostKeyAlias="+t.host)
	case "git":
		u, _ := url.Parse(raw)
		from := "git://" + u.Host + "/"
		port := cmp.Or(t.port, "9418")
		opts = append(opts, "-c", "url.git://"+net.JoinHostPort(ip.String(), port)+"/.insteadOf="+from)
	}
	return opts, env, nil
}

// plain is a refusal as a sync records it: the message without the code
// an HTTP answer would carry.
func plain(err error) error {
	var pe *fault.Error
	if errors.As(err, &pe) {
		return errors.New(pe.Message)
	}
	return err
}

// ipForCurl writes an address as curl's --resolve takes it (IPv6 in
// brackets).
func ipForCurl(ip netip.Addr) string {
	if ip.Is6() {
		return "[" + ip.String() + "]"
	}
	return ip.String()
}
