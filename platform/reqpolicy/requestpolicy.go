package reqpolicy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"deckhand/platform/fault"

	"github.com/valyala/fasthttp"
)

// RequestPolicy is the one rule that keeps web pages away from the
// container's services (docs/design/request-policy.md). The gateway and
// every container service's Host apply it before any routing:
//
//  1. Host. Only loopback names (127.0.0.1, [::1], localhost, any port),
//     the IP literal the connection arrived on (and 0.0.0.0 or [::]), names under Domain (and
//     Domain itself) and the hosts of AllowedOrigins are served; any other
//     Host gets 421 MISDIRECTED_REQUEST. DNS rebinding needs the attacker's
//     own name in Host, so this closes it (Jupyter's fix).
//  2. Origin. A request carrying Origin is refused with 403 FORBIDDEN on
//     every route and method (reads too: screenshots and scrollback are
//     secrets) unless the origin is the request's own (its host[:port]
//     equals the Host that passed step 1), under Domain (for a loopback
//     Domain such as the default "localhost", only on the request's own
//     port: a loopback origin on another port is another program), or
//     listed in AllowedOrigins. "null" is never allowed.
//  3. Sec-Fetch-Site. Without Origin, a browser's cross-site or same-site
//     request (an <img>, <script> or form GET) is refused too, except a
//     top-level navigation (Sec-Fetch-Mode: navigate, Sec-Fetch-Dest:
//     document, GET or HEAD), so a link to a service's page still opens
//     it. A navigation of a frame (iframe, frame, embed, object) is
//     refused: another site must not put a shell or a desktop under its
//     own clicks (every answer of a Host also says so itself: NoFraming).
//  4. CORS (cors.go). An origin listed in AllowedOrigins gets the CORS
//     response headers naming it, so the browser lets the page read the
//     answer; a CORS preflight from it (or from the request's own origin)
//     is answered 204 right here, before routing and authorization, and
//     never reaches a handler. Origins allowed only by being under Domain
//     get no CORS: they may send what a browser sends without asking, as
//     before, but not read answers nor send preflighted requests. A
//     tunnelled app is served under Domain (the tunnel's /proxy/{port}),
//     and a dev server running third-party code must not read the
//     terminal. Decide returns both verdicts from one reading.
//
// Requests with neither header come from non-browser clients (curl, SDKs)
// and pass; the gateway's permissions document authorizes them.
type RequestPolicy struct {
	domain  string
	origins map[string]bool // "scheme://host[:port]", lower case
	hosts   map[string]bool // host names of origins, lower case, no port
}

// NewRequestPolicy builds the policy for --domain and --allowed-origins
// (a comma list of origins such as https://app.example.com).
func NewRequestPolicy(domain string, allowedOrigins []string) (*RequestPolicy, error) {
	p := &RequestPolicy{domain: strings.ToLower(strings.Trim(domain, ".")), origins: map[string]bool{}, hosts: map[string]bool{}}
	for _, o := range allowedOrigins {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("--allowed-origins: %q is not an origin: want scheme://host[:port] with scheme http or https and nothing after it", o)
		}
		p.origins[strings.ToLower(u.Scheme+"://"+u.Host)] = true
		p.hosts[strings.ToLower(u.Hostname())] = true
	}
	return p, nil
}

// DefaultPolicy is the policy of `--domain localhost` with no extra origins.
func DefaultPolicy() *RequestPolicy {
	p, _ := NewRequestPolicy("localhost", nil)
	return p
}

// Domain is the --domain the policy was built with.
func (p *RequestPolicy) Domain() string { return p.domain }

// Check applies the policy; nil means the request may be routed.
func (p *RequestPolicy) Check(r Request) *fault.Error {
	_, err := p.Decide(r)
	return err
}

// Decide applies the policy and, for a request it lets through, says
// which CORS answer it gets (the zero CORS: none). A Preflight decision is
// answered with CORS.WritePreflight instead of being routed.
func (p *RequestPolicy) Decide(r Request) (CORS, *fault.Error) {
	if err := p.checkHost(r.Host, r.LocalIP, nil); err != nil {
		return CORS{}, err
	}
	own := r.Host
	if r.ForwardedHost != "" {
		// The gateway judged this Host against the address the client
		// connected to, which is not this connection's: any address of
		// this machine stands for it.
		if err := p.checkHost(r.ForwardedHost, nil, ownAddress); err != nil {
			return CORS{}, err
		}
		own = r.ForwardedHost
	}
	if r.HasOrigin {
		allowed, same, listed := p.originAllowed(r.Origin, own)
		if !allowed {
			return CORS{}, &fault.Error{Code: fault.CodeForbidden, Details: "origin",
				Message: fmt.Sprintf("origin %s may not call this service (allowed: this service's own origin, origins under --domain, --allowed-origins)", quoteShort(r.Origin))}
		}
		return corsFor(r, same, listed), nil
	}
	site := strings.ToLower(r.SecFetchSite)
	if site == "cross-site" || site == "same-site" {
		nav := strings.EqualFold(r.SecFetchMode, "navigate") && (r.Method == http.MethodGet || r.Method == http.MethodHead)
		if !nav {
			return CORS{}, &fault.Error{Code: fault.CodeForbidden, Details: "sec-fetch-site",
				Message: "a " + site + " browser request without an allowed Origin may not call this service"}
		}
		if !strings.EqualFold(r.SecFetchDest, "document") {
			return CORS{}, &fault.Error{Code: fault.CodeForbidden, Details: "sec-fetch-dest",
				Message: "a " + site + " page may not open this service inside a frame (Sec-Fetch-Dest " + quoteShort(r.SecFetchDest) +
					"); only a top-level navigation may"}
		}
	}
	return CORS{}, nil
}

func quoteShort(s string) string {
	if len(s) > 200 {
		s = s[:200]
	}
	return fmt.Sprintf("%q", s)
}

// checkHost accepts loopback names, the connection's own IP literal (or,
// when own is set, any IP literal own accepts), names under the domain
// and the configured origins' hosts.
func (p *RequestPolicy) checkHost(hostport string, local net.IP, own func(net.IP) bool) *fault.Error {
	name := strings.ToLower(hostname(hostport))
	if p.hostAllowed(name, local) {
		return nil
	}
	if ip := net.ParseIP(name); ip != nil && own != nil && own(ip) {
		return nil
	}
	return &fault.Error{Code: fault.CodeMisdirected, Details: "host",
		Message: fmt.Sprintf("host %s is not served here (served: loopback names, names under %s, hosts of --allowed-origins)", quoteShort(hostport), p.domain)}
}

func (p *RequestPolicy) hostAllowed(name string, local net.IP) bool {
	if name == "" {
		return false
	}
	if name == "localhost" || p.hosts[name] || p.underDomain(name) {
		return true
	}
	ip := net.ParseIP(name)
	if ip == nil {
		return false
	}
	// 0.0.0.0 and :: reach this machine (`deckhand status --listen
	// 0.0.0.0:7700` sends that Host); an IP literal is never a rebinding.
	return ip.IsLoopback() || ip.IsUnspecified() || (local != nil && ip.Equal(local))
}

func (p *RequestPolicy) underDomain(name string) bool {
	return p.domain != "" && (name == p.domain || strings.HasSuffix(name, "."+p.domain))
}

// originAllowed reports whether origin may call, whether it is the
// request's own origin (its host[:port] is the Host that passed; a page
// needs no CORS headers to read its own origin's answers), and whether it
// is named in --allowed-origins (only those get CORS headers).
func (p *RequestPolicy) originAllowed(origin, own string) (allowed, same, listed bool) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") {
		return false, false, false // "null", file:, chrome-extension: ...
	}
	same = strings.EqualFold(u.Host, own)
	listed = p.origins[strings.ToLower(u.Scheme+"://"+u.Host)]
	if same || listed {
		return true, same, listed
	}
	name := strings.ToLower(u.Hostname())
	if !p.underDomain(name) {
		return false, false, false
	}
	if !loopbackName(p.domain) {
		return true, false, false
	}
	// Under a loopback domain every name is this machine: only the port
	// tells the gateway's pages from another local program's.
	return originPort(u) == hostPort(own), false, false
}

// loopbackName reports names that always resolve to this machine.
func loopbackName(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

func hostPort(hostport string) string {
	if _, port, err := net.SplitHostPort(hostport); err == nil && port != "" {
		return port
	}
	return ""
}

func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// WriteHTTPError writes err as the container error body on a net/http
// response (the gateway, a hijacking handler): the same body and status
// a container service's Host writes.
func WriteHTTPError(w http.ResponseWriter, err error) {
	WriteHTTPErrorStatus(w, 0, err)
}

// WriteHTTPErrorStatus is WriteHTTPError with a status other than the
// code's (the gateway answers BACKEND_ERROR with 502, not 500); 0 keeps it.
func WriteHTTPErrorStatus(w http.ResponseWriter, status int, err error) {
	e := fault.AsError(err)
	status = cmp.Or(status, e.Status())
	for k, v := range e.Headers {
		w.Header().Set(k, v)
	}
	for _, line := range e.SetCookies {
		w.Header().Add("Set-Cookie", line)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8") // as the Fiber host writes it
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY") // NoFraming: an error of the agent's own
	w.Header().Set("Content-Security-Policy", FrameAncestorsNone)
	w.WriteHeader(status)
	_, _ = w.Write(containerErrorBody(e))
}

// WriteFastError is WriteHTTPErrorStatus on a fasthttp response (the
// gateway): the same status, headers and body.
func WriteFastError(rc *fasthttp.RequestCtx, status int, err error) {
	e := fault.AsError(err)
	status = cmp.Or(status, e.Status())
	rc.Response.Reset()
	for k, v := range e.Headers {
		rc.Response.Header.Set(k, v)
	}
	for _, line := range e.SetCookies {
		rc.Response.Header.Add("Set-Cookie", line)
	}
	rc.Response.Header.SetContentType("application/json")
	rc.Response.Header.Set("X-Content-Type-Options", "nosniff")
	NoFraming(&rc.Response.Header)
	rc.SetStatusCode(status)
	rc.SetBody(containerErrorBody(e))
}

func containerErrorBody(e *fault.Error) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(fault.ContainerError{Code: e.Code, Details: e.Details, Message: e.Message})
	return b.Bytes()
}
