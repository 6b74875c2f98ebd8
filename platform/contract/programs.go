package contract

import (
	"cmp"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Program names of proxy permissions (docs/spec/operations.md): what a document's
// rules name. platform/proxyperm evaluates them; they live here so every
// service's OpenAPI document can say which program the gateway judges it
// as.
const (
	ProgramHTTP          = "http"
	ProgramTerminal      = "terminal"
	ProgramSSH           = "ssh"
	ProgramFiles         = "files"
	ProgramExec          = "exec"
	ProgramServices      = "services"
	ProgramNotifications = "notifications"
	// ProgramDesktop drives the display: keyboard, pointer, element
	// actions and VNC control. A services grant only reads the screen.
	ProgramDesktop = "desktop"
)

// servicePrograms maps the services a program other than services judges.
// Every service that runs a command is terminal or exec, so a services
// grant never reaches a command.
var servicePrograms = map[string]string{
	"terminal": ProgramTerminal,
	"process":  ProgramExec, "daemon": ProgramExec, "exec": ProgramExec, "cron": ProgramExec, "run": ProgramExec,
	"files":         ProgramFiles,
	"notifications": ProgramNotifications,
	"tunnel":        ProgramHTTP, // judged by the tunnelled port: ssh for 22
}

// ServiceProgram is the program proxy permissions judge a service as
// (services for any service not named in docs/spec/operations.md's table).
func ServiceProgram(service string) string {
	return cmp.Or(servicePrograms[service], ProgramServices)
}

// programDescription tells a service's OpenAPI readers which program of
// the proxy permissions document admits a request through the gateway.
func programDescription(service string) string {
	p := ServiceProgram(service)
	switch {
	case service == "tunnel":
		return "Through the agent's gateway, proxy permissions judge /proxy/{port}/ and the WebSocket route by the " +
			"tunnelled port (program ssh for port 22, http for any other, the rule's ports matched against that port) " +
			"and this service's other routes as program services."
	case service == displayService:
		return "Through the agent's gateway, proxy permissions judge this service's input (keyboard, pointer, window and " +
			"element actions, act and batch, the clipboard's setting, pausing and resuming the agent, and the takeover view " +
			"and WebSocket in mode control) as program desktop, which drives the desktop as a terminal drives a shell (a " +
			"services grant never reaches it), and the routes that only read (screenshots, windows, the accessibility tree " +
			"and search, the clipboard, recordings, the takeover view in mode view and its files) as program services."
	case p == ProgramExec || p == ProgramTerminal:
		return "Through the agent's gateway, proxy permissions judge every route of this service as program " + p +
			" (it runs commands: a services grant never reaches it)."
	}
	return "Through the agent's gateway, proxy permissions judge every route of this service as program " + p + "."
}

// displayService is the service whose routes RouteProgram judges one by one.
const displayService = "display"

// displayPrefix is where the display service's routes live.
const displayPrefix = "/api/v1/display"

// RouteProgram is the program proxy permissions judge one request to a
// service as: ServiceProgram, except for the display service, whose routes
// that only read the screen are services and everything else (typing,
// clicking, element actions, taking control) desktop. A route it does not
// know as a read is desktop: a new input route is never a services route
// by omission. path is the service's own path (escaped, as it travels);
// query returns a query parameter's value.
func RouteProgram(service, method, path string, query func(string) string) string {
	if service != displayService {
		return ServiceProgram(service)
	}
	if displayRead(method, path, query) {
		return ProgramServices
	}
	return ProgramDesktop
}

// displayReads are the display's routes, below displayPrefix, that do not
// act on the desktop besides GET ones: a search, and recordings (reading
// the screen into a file).
var displayReads = map[string][]string{
	"/window/search":     {"POST"},
	"/recordings":        {"POST"},
	"/recordings/*/stop": {"POST"},
	"/recordings/*":      {"DELETE"},
}

// displayRead reports whether a request to the display only reads. The
// path is judged as the service's router would see it (unescaped, cleaned,
// case-insensitive, a trailing slash dropped); one that does not unescape
// is not a read.
func displayRead(method, escaped string, query func(string) string) bool {
	p, err := url.PathUnescape(escaped)
	if err != nil || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	p = strings.ToLower(path.Clean("/" + p))
	rest, ok := strings.CutPrefix(p, displayPrefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return false
	}
	method = strings.ToUpper(method)
	if method == "GET" || method == "HEAD" {
		// The takeover view and its WebSocket give control unless the
		// request asks to watch only; its files are the noVNC client.
		if rest == "/vnc" || rest == "/vnc/websockify" {
			return query != nil && query("mode") == "view"
		}
		return true
	}
	for pattern, methods := range displayReads {
		if matchSegments(pattern, rest) && slices.Contains(methods, method) {
			return true
		}
	}
	return false
}

// matchSegments matches a path against a pattern whose "*" segments stand
// for exactly one segment.
func matchSegments(pattern, p string) bool {
	ps, qs := strings.Split(pattern, "/"), strings.Split(p, "/")
	if len(ps) != len(qs) {
		return false
	}
	for i := range ps {
		if ps[i] != "*" && ps[i] != qs[i] {
			return false
		}
	}
	return true
}

// Headers the agent's gateway sets on a request to a service that acts
// for its caller on other services (the registry entry's ActsFor, such as
// the mcp service's tools). Both are identity headers: the gateway drops
// every copy a client sends, so the service may rely on them, and a
// request without ReachHeader did not come through the gateway.
const (
	// ReachHeader is a comma list of the acting service itself and those
	// of the others the same proxy permissions decision, for the same
	// credential and client, admits (each judged as its own program and
	// port): the service shows and runs only what its caller could reach
	// directly.
	ReachHeader = IdentityHeaderPrefix + "Reach"
	// ToolsHeader is set for a service whose callers a document's tool
	// allow-list limits (the entry's ToolList; the mcp_tools extension of
	// its groups): a comma list of tool names and prefix patterns ending
	// in '*' (Acting.MayUse). Absent, the caller's tools are
	// limited by its reach only.
	ToolsHeader = IdentityHeaderPrefix + "Tools"
	// DesktopReach names, in ReachHeader, a caller who may drive a
	// service whose input is judged as program desktop (HasDesktopInput),
	// beside that service's own name for one who may only read it.
	DesktopReach = ProgramDesktop
)

// HasDesktopInput reports whether proxy permissions judge service's input
// as program desktop (RouteProgram) and its reading routes as services.
func HasDesktopInput(service string) bool { return service == displayService }

// The identity headers the agent's gateway sets on a request it admitted,
// naming the credential its decision found. It drops every header a
// client sends under IdentityHeaderPrefix first, so a service may rely on
// them, and one that calls another for its caller hands them on.
const (
	IdentityHeaderPrefix  = "X-Deckhand-Identity-"
	IdentityGroupHeader   = IdentityHeaderPrefix + "Group"
	IdentityTypeHeader    = IdentityHeaderPrefix + "Type"
	IdentitySubjectHeader = IdentityHeaderPrefix + "Subject"
)

// IdentityHeaders are the headers that name the caller (group, type,
// subject).
var IdentityHeaders = []string{IdentityGroupHeader, IdentityTypeHeader, IdentitySubjectHeader}
