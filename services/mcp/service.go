// Package mcp owns the agent's Model Context Protocol server (port +16):
// Streamable HTTP at /api/v1/mcp (sessions, resumable SSE streams through
// an event store) built on the official Go SDK. A tool that is one
// operation of another service is that service's route (platform.Tool),
// listed and read for a model as its face says (platform/mcptool) and
// called through the service's host in memory, or on its port when it runs
// as a child. The other tools (compositions such as files_edit) and the
// resources call the services that own what they touch, whose own checks
// and limits apply.
//
// Who may use what: the gateway judges a request to this service as usual
// and, because this service acts for its caller (ActsFor), also judges
// the caller against each service the tools call, each as its own program
// and port (contract.Acting). A tool of a service the caller may not reach,
// or outside its tool allow-list (mcp_tools), is left out of tools/list
// and refused on tools/call; so are the resources read by the same means
// (reach.go, resourceOf). A caller on this service's own port that did not
// come through the gateway is a trusted local user (the host refuses
// others) and reaches every service.
//
// One file per concern: routetools.go (tools that are routes), reach.go
// (who may call what, and the journal), tools_files.go (the composition
// files_edit), resources.go (file, process and
// journal resources, file subscriptions), sessions.go (who owns a session).
package mcp

import (
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/mcptool"
	"deckhand/platform/reqpolicy"
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

// Pong answers mcp_ping.
type Pong struct {
	Pong bool `json:"pong"`
}

// Service is the MCP service.
type Service struct {
	deps contract.ServiceDeps
	set  *Settings
	log  *slog.Logger
	// be calls what of the agent's other services is no tool (the files
	// watch's stream) on its loopback port, with the caller's identity
	// headers (caller.forward); a route tool runs in memory when its
	// service does (routetools.go).
	be      *platform.ServiceClient
	server  *mcp.Server
	handler http.Handler
	subs    *subscriptions
	running *running
	catalog catalog

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions int // open sessions (counted by the server's hooks)

	// built makes server, its tools and inner (the SDK's handler) on the
	// first request (build).
	built sync.Once
	inner http.Handler
}

// New builds the MCP server with its tools and resources.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = Defaults()
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	s := &Service{deps: deps, set: set, log: deps.Logger, be: platform.NewServiceClient(set.ServiceHost, set.PortBase, deps.Offsets)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.catalog = catalog{loaded: map[string]bool{}, tools: map[string]*mcptool.Tool{}}
	s.subs = newSubscriptions(s, set.MaxSubscriptions)
	var listed []string
	if strings.TrimSpace(set.Services) != "" {
		listed = contract.CommaList(set.Services)
	}
	s.running = newRunning(s.be, listed)
	// The MCP server (its tools' schemas) is built on the first request,
	// which also starts reading the route tools from the services' OpenAPI
	// documents in the background, not at start: most containers never
	// open a session, and both cost every agent's start CPU and megabytes
	// of heap kept for as long as it runs.
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.build()
		s.inner.ServeHTTP(w, r)
	})
	return s, nil
}

// preload loads the route tools of the services the agent runs, from the
// first MCP request (a session's initialize) on, so that the session's
// first call does not wait for it (nor see the tool list change under it). Without --mcp-services it gives up
// after a minute: tools/list and tools/call load what answers later.
func (s *Service) preload(listed []string) {
	want := ActsFor
	if listed != nil {
		want = slices.DeleteFunc(slices.Clone(want), func(svc string) bool { return !slices.Contains(listed, svc) })
	}
	for start := time.Now(); s.loadTools(s.ctx, want) != nil && (listed != nil || time.Since(start) < time.Minute); {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(healthTTL):
		}
	}
}

// build makes the MCP server with its tools and resources, once.
func (s *Service) build() {
	s.built.Do(func() {
		// The SDK logs every session's start and end at info; the journal has
		// what matters (tool calls), so only its warnings reach the log.
		sdkLog := slog.New(atLeast{s.deps.Logger.Handler(), slog.LevelWarn})
		s.server = mcp.NewServer(&mcp.Implementation{Name: "deckhand", Title: "deckhand container agent", Version: platform.Version},
			&mcp.ServerOptions{
				Instructions: "Tools to drive this container: run commands (process_*), read and change files (files_*), see and " +
					"operate its X display (display_*, display_find and display_element_* by accessibility), keep notes (notes_*) and " +
					"workspace memory (workspace_memory_*) and read its journal (journal_query). Long text is trimmed to max_chars with " +
					"a marker saying where it stopped; call again with offset to read on. Paths are absolute.",
				Logger:             sdkLog,
				KeepAlive:          30 * time.Second,
				SubscribeHandler:   s.subs.subscribe,
				UnsubscribeHandler: s.subs.unsubscribe,
			})
		mcp.AddTool(s.server, &mcp.Tool{Name: "mcp_ping", Title: "Check the connection",
			Description: "Does nothing and answers pong: a check that this server answers.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, Pong, error) {
				return textResult("pong"), Pong{Pong: true}, nil
			})
		s.addFilesTools()
		s.addResources()
		s.server.AddReceivingMiddleware(s.guard)
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server }, &mcp.StreamableHTTPOptions{
			EventStore:     mcp.NewMemoryEventStore(nil),
			SessionTimeout: s.set.SessionIdle,
			Logger:         sdkLog,
			// The host's request policy (Host 421, Origin 403, the local
			// user's trust) judges every request before this handler, through
			// the gateway and on the service's own port alike; the SDK's own
			// loopback Host check would refuse the gateway's Host routing.
			DisableLocalhostProtection: true,
		})
		s.inner = s.bound(h)
		go s.preload(s.running.listed)
	})
}

// Close ends every session and the file watches.
func (s *Service) Close() error {
	s.cancel()
	// No server is built once closing; one being built is waited for.
	s.built.Do(func() {})
	if s.server != nil {
		for ss := range s.server.Sessions() {
			_ = ss.Close()
		}
	}
	s.subs.close()
	s.be.Close()
	return nil
}

// bound refuses a new session past --mcp-max-sessions (503, so a client
// retries later), answers a session bound to another credential as one
// that does not exist (404, as the SDK answers an unknown id), and marks
// what the caller may reach and who it is before the SDK sees the request.
func (s *Service) bound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		contract.MarkLocal(r)
		owner := ownerKey(r)
		r.Header.Set(ownerHeader, owner)
		if id := r.Header.Get("Mcp-Session-Id"); id != "" && !s.subs.mayUse(id, owner) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			n := 0
			for range s.server.Sessions() {
				n++
			}
			if n >= s.set.MaxSessions {
				reqpolicy.WriteHTTPError(w, &fault.Error{Code: fault.CodeUnavailable, Details: "sessions",
					Headers: map[string]string{"Retry-After": "5"},
					Message: "too many MCP sessions are open (--mcp-max-sessions); retry once one ends or idles out"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

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
			Tags: tags, RequestType: "application/json", ContentType: "text/event-stream", HTTP: s.handler},
		{Method: http.MethodGet, Path: Path, OperationID: "mcpStream", Summary: "Open or resume an MCP session's stream",
			Description: desc, Tags: tags, ContentType: "text/event-stream",
			Query: []platform.Param{{Name: "Mcp-Session-Id", In: "header", Required: true, Description: "the session"},
				{Name: "Last-Event-ID", In: "header", Description: "resume after this event"}}, HTTP: s.handler},
		{Method: http.MethodDelete, Path: Path, OperationID: "mcpEnd", Summary: "End an MCP session", Description: desc,
			Tags: tags, Query: []platform.Param{{Name: "Mcp-Session-Id", In: "header", Required: true, Description: "the session"}},
			HTTP: s.handler},
	}
}

// atLeast drops records below a level.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (a atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= a.min && a.Handler.Enabled(ctx, l)
}

func (a atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{a.Handler.WithAttrs(attrs), a.min}
}

func (a atLeast) WithGroup(name string) slog.Handler {
	return atLeast{a.Handler.WithGroup(name), a.min}
}
