package proxyperm

import (
	"net/http"
	"net/netip"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// CodeProxyDisabled is the refusal of a gateway whose document says
// enable_proxy false.
const CodeProxyDisabled = "PROXY_DISABLED"

func init() { fault.RegisterCode(CodeProxyDisabled, http.StatusServiceUnavailable) }

// Facts are what the evaluator knows about one request: no HTTP types,
// only strings the gateway read. Header, Cookie and Param return "" when
// absent; nil functions mean "none".
type Facts struct {
	// Program and Port are what the request reaches (see ProgramFor).
	Program string
	Port    int
	// Source is the client address: the connection's peer, or the
	// trusted proxy's X-Forwarded-For hop under --trust-proxy-headers.
	Source netip.Addr
	// Loopback: the connection comes from loopback and no trusted proxy
	// named another client. Only it passes without a document, or when
	// the proxy is disabled (in-container tools).
	Loopback bool
	// Audience is the container this gateway serves: a container claim
	// must be issued for it.
	Audience string
	Header   func(name string) string
	Cookie   func(name string) string
	Param    func(name string) string
	// Now is the evaluation time (exp, nbf, claim iat).
	Now time.Time
	// ToolList asks an allowing decision for the caller's mcp tool
	// allow-list (Decision.Tools): set for requests to the mcp service.
	ToolList bool
	// ActingFor: the request is one the mcp service makes for its caller
	// (judged for its reach), not one the caller sent to the service.
	ActingFor bool
	// Service is the service the request reaches, as the gateway routed
	// it, and Via the one acting for the caller when ActingFor: an access
	// token limited to some services is judged by them.
	Service, Via string
}

// admitsDirectly reports whether group g may admit the request by its
// rules: a group carrying mcp_tools is a boundary that admits its holder
// to the mcp service only (ToolList); its other programs act only through
// that service's tools (ActingFor), never for a request sent straight to
// another service.
func (f *Facts) admitsDirectly(g *CompiledGroup) bool {
	return g.Tools == nil || f.ToolList || f.ActingFor
}

// ask is one of Facts' Header, Cookie and Param asked for n ("" when the
// function is nil).
func ask(fn func(name string) string, n string) string {
	if fn == nil {
		return ""
	}
	return fn(n)
}

// Outcome is what the gateway does with a request.
type Outcome uint8

// Outcomes.
const (
	Allowed      Outcome = iota
	Unauthorized         // 401: no credential matched (none, malformed or wrong)
	Forbidden            // 403: a group matched but none allows program and port
	Disabled             // 503 PROXY_DISABLED
)

// Decision is the evaluator's answer. Group, Type and Subject name the
// identity (empty when the default policy decided); Reason is for the
// journal and never holds a credential.
type Decision struct {
	Outcome Outcome
	Group   string
	Type    string
	Subject string
	Reason  string
	// Matched lists every group whose credential matched (only filled when
	// the request was refused or decided by the default).
	Matched []string
	// Tools, when Facts.ToolList asked for it and a group allowed the
	// request, is the union of the mcp_tools of every group that admits
	// it (credential matched, rules allow program and port), sorted; nil
	// when none of them carries a list: no limit.
	Tools []string
}

// Allowed reports whether the request passes.
func (d Decision) Allowed() bool { return d.Outcome == Allowed }

// Error is the container error a refusal renders as. Messages never name
// a group: a caller learns nothing about which groups exist.
func (d Decision) Error(service string) *fault.Error {
	switch d.Outcome {
	case Unauthorized:
		return &fault.Error{Code: fault.CodeUnauthorized, Details: service,
			Message: "authentication required: no valid credential for this container was presented"}
	case Forbidden:
		return &fault.Error{Code: fault.CodeForbidden, Details: service,
			Message: "access denied: your credential does not allow this service"}
	case Disabled:
		return &fault.Error{Code: CodeProxyDisabled, Details: service,
			Message: "the proxy of this container is disabled"}
	}
	return nil
}

// Program names (see contract.ServiceProgram).
const (
	ProgramHTTP          = contract.ProgramHTTP
	ProgramTerminal      = contract.ProgramTerminal
	ProgramSSH           = contract.ProgramSSH
	ProgramFiles         = contract.ProgramFiles
	ProgramExec          = contract.ProgramExec
	ProgramServices      = contract.ProgramServices
	ProgramNotifications = contract.ProgramNotifications
	ProgramDesktop       = contract.ProgramDesktop
)

// ProgramFor maps a service reached through the gateway, and its port, to
// the program name a rule names (docs/spec/operations.md, contract.ServiceProgram):
// terminal for the terminal; exec for every other service that runs a
// command (process, daemon, exec, cron, run); files and notifications for
// those services; for a tunnelled port (service "tunnel" or "http", port
// the tunnelled one) ssh for 22 and http for any other; ssh for service
// "ssh" or port 22; services for the rest, which never reaches a command.
func ProgramFor(service string, port int) string {
	switch service {
	case "tunnel", ProgramHTTP:
		if port == 22 {
			return ProgramSSH
		}
		return ProgramHTTP
	case ProgramSSH:
		return ProgramSSH
	}
	if p := contract.ServiceProgram(service); p != ProgramServices || port != 22 {
		return p
	}
	return ProgramSSH
}
