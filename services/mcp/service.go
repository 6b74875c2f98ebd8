// Package mcp is the agent's Model Context Protocol service (port +16):
// the MCP server over the route tools of the services it acts for
// (platform/mcpserver, at /api/v1/mcp), with what is not one route of
// theirs: mcp_ping, the composition files_edit (tools.go), and the file,
// process and journal resources with file subscriptions (resources.go),
// which call the services that own what they touch, whose own checks and
// limits apply.
package mcp

import (
	_ "embed"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/mcpserver"
	"deckhand/platform/mcptool"
)

// ActsFor are the services the tools call for their caller: the agent's
// registry declares them, and the gateway judges the caller against each
// (contract.ReachHeader).
var ActsFor = []string{"process", "files", "display", "journal", "notes", "workspace", "tunnel", "vault"}

// Path is where the service speaks MCP.
const Path = "/api/v1/mcp"

// Settings are the mcp service's flags.
type Settings struct {
	// PortBase and ServiceHost find the other services: host:base+offset.
	PortBase    int
	ServiceHost string
	MaxSessions int
	SessionIdle time.Duration
	// MaxSubscriptions bounds the file subscriptions of one session.
	MaxSubscriptions int
	// OutputBudget is the default number of characters of text a tool
	// answers before it trims (a caller may ask for another per call).
	OutputBudget int
	// Services is the comma list of services the agent runs (set from
	// --services): tools of others are not offered. "": not known, every
	// service whose port answers counts.
	Services string
}

// Flags declares --mcp-*.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.IntVar(&s.PortBase, "mcp-port-base", 7700, "the agent's port base, to reach the services the tools call (set from --port-base)")
	fs.StringVar(&s.ServiceHost, "mcp-service-host", "127.0.0.1", "the host the agent's services listen on (set from --bind; an unspecified address means 127.0.0.1)")
	fs.IntVar(&s.MaxSessions, "mcp-max-sessions", 64, "MCP sessions open at once at most; a new one beyond is refused with 503 until one ends or idles out")
	fs.DurationVar(&s.SessionIdle, "mcp-session-idle", 30*time.Minute, "close an MCP session that sent no request for this long")
	fs.IntVar(&s.MaxSubscriptions, "mcp-max-subscriptions", 100, "file subscriptions one MCP session holds at most (each URI spelling counts); one more is a JSON-RPC error naming this limit")
	fs.IntVar(&s.OutputBudget, "mcp-output-budget", 20000, "characters of text a tool answers by default before trimming (the rest is fetched with offset)")
	fs.StringVar(&s.Services, "mcp-services", "", "comma list of the services this agent runs, whose tools tools/list offers (set from --services; empty: those whose port answers)")
}

// Validate checks the bounds.
func (s *Settings) Validate() error {
	switch {
	case s.PortBase < 0 || s.PortBase > 65535-16:
		return fault.Invalid("--mcp-port-base", "must be between 0 and %d", 65535-16)
	case strings.TrimSpace(s.ServiceHost) == "":
		return fault.Invalid("--mcp-service-host", "must not be empty")
	case s.MaxSessions < 1:
		return fault.Invalid("--mcp-max-sessions", "must be at least 1")
	case s.SessionIdle < time.Second:
		return fault.Invalid("--mcp-session-idle", "must be at least 1s")
	case s.MaxSubscriptions < 1 || s.MaxSubscriptions > 100000:
		return fault.Invalid("--mcp-max-subscriptions", "must be between 1 and 100000")
	case s.OutputBudget < 1000 || s.OutputBudget > mcptool.MaxBudget:
		return fault.Invalid("--mcp-output-budget", "must be between 1000 and %d", mcptool.MaxBudget)
	}
	return nil
}

// Defaults are the flags' defaults.
func Defaults() *Settings {
	s := &Settings{}
	fs := pflag.NewFlagSet("mcp", pflag.ContinueOnError)
	s.Flags(fs)
	return s
}

// Service is the MCP service.
type Service struct {
	set *Settings
	// be calls what of the agent's other services is no tool (the files
	// watch's stream) on its loopback port, with the caller's identity
	// headers (Caller.Forward).
	be   *platform.ServiceClient
	srv  *mcpserver.Server
	subs *subscriptions
}

// New makes the MCP service; its server is built on the first request.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = Defaults()
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	s := &Service{set: set, be: platform.NewServiceClient(set.ServiceHost, set.PortBase, deps.Offsets)}
	s.subs = newSubscriptions(s, set.MaxSubscriptions)
	var listed []string
	if strings.TrimSpace(set.Services) != "" {
		listed = contract.CommaList(set.Services)
	}
	s.srv = mcpserver.New(mcpserver.Options{Own: "mcp", ActsFor: ActsFor, Listed: listed, Budget: set.OutputBudget,
		MaxSessions: set.MaxSessions, SessionIdle: set.SessionIdle,
		Implementation: &mcp.Implementation{Name: "deckhand", Title: "deckhand container agent", Version: platform.Version},
		Server: mcp.ServerOptions{
			Instructions: "Tools to drive this container: run commands (process_*), read and change files (files_*), see and " +
				"operate its X display (display_*, display_find and display_element_* by accessibility), keep notes (notes_*) and " +
				"workspace memory (workspace_memory_*) and read its journal (journal_query). Long text is trimmed to max_chars with " +
				"a marker saying where it stopped; call again with offset to read on. Paths are absolute.",
			KeepAlive:          30 * time.Second,
			SubscribeHandler:   s.subs.subscribe,
			UnsubscribeHandler: s.subs.unsubscribe,
		},
		ResourceOf: resourceOf, Add: s.add, Ended: s.subs.end, Deps: deps, Client: s.be})
	return s, nil
}

// Close ends every session and the file watches.
func (s *Service) Close() error {
	s.srv.Close()
	s.subs.close()
	s.be.Close()
	return nil
}

// Activity counts the open MCP sessions (each keeps the container from
// idling until it ends: DELETE, --mcp-session-idle or the service's
// close) and when the last one ended.
func (s *Service) Activity() contract.Activity { return s.srv.Activity() }

// about describes the service in its OpenAPI document.
//
//go:embed about.md
var about string

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:        "mcp",
		Title:       "deckhand MCP server",
		Version:     platform.Version,
		Description: strings.TrimSpace(about),
	}
}

// Routes is the service's route table: the one MCP endpoint.
func (s *Service) Routes() []platform.Route {
	desc := "The MCP Streamable HTTP transport. POST a JSON-RPC message (initialize first: the answer's Mcp-Session-Id header " +
		"names the session, sent on every later request with MCP-Protocol-Version); the answer is JSON or a text/event-stream " +
		"whose events carry ids, so a client that lost the stream GETs it again with Last-Event-ID and gets what it missed. " +
		"GET opens the session's stream of server notifications (resources/updated for subscribed files). DELETE ends the " +
		"session. Accept must name application/json and text/event-stream. A new session past --mcp-max-sessions is 503 " +
		"UNAVAILABLE. Cross-site Origins and foreign Host names are refused as on every route."
	tags := []string{"mcp"}
	return []platform.Route{
		{Method: http.MethodPost, Path: Path, OperationID: "mcpPost", Summary: "Send an MCP message", Description: desc,
			Tags: tags, RequestType: "application/json", ContentType: "text/event-stream", HTTP: s.srv},
		{Method: http.MethodGet, Path: Path, OperationID: "mcpStream", Summary: "Open or resume an MCP session's stream",
			Description: desc, Tags: tags, ContentType: "text/event-stream",
			Query: []platform.Param{{Name: "Mcp-Session-Id", In: "header", Required: true, Description: "the session"},
				{Name: "Last-Event-ID", In: "header", Description: "resume after this event"}}, HTTP: s.srv},
		{Method: http.MethodDelete, Path: Path, OperationID: "mcpEnd", Summary: "End an MCP session", Description: desc,
			Tags: tags, Query: []platform.Param{{Name: "Mcp-Session-Id", In: "header", Required: true, Description: "the session"}},
			HTTP: s.srv},
	}
}
