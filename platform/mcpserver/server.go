package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/mcptool"
	"deckhand/platform/reqpolicy"
)

// New makes the server; nothing is built before its first request.
func New(o Options) *Server {
	s := &Server{o: o, log: o.Deps.Logger, running: &running{be: o.Client, services: o.ActsFor, listed: o.Listed},
		catalog: catalog{loaded: map[string]bool{}, tools: map[string]*mcptool.Tool{}},
		owners:  owners{ended: o.Ended, busy: o.Own + "_session", byID: map[string]string{}}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Track makes sure the server knows of ss, so that Options.Ended is told
// when it ends, even when it has ended already.
func (s *Server) Track(ss *mcp.ServerSession) { s.owners.track(ss) }

// Sessions is the number of open sessions the server knows of.
func (s *Server) Sessions() int { return s.owners.open() }

// Activity counts the open sessions (each keeps the container from idling
// until it ends) and when the last one ended.
func (s *Server) Activity() contract.Activity { return s.owners.activity() }

// SDK is the SDK's server, for Options.Add and notifications.
func (s *Server) SDK() *mcp.Server { return s.sdk }

// Context ends when the server closes.
func (s *Server) Context() context.Context { return s.ctx }

// ServeHTTP serves the Streamable HTTP transport.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.build()
	s.inner.ServeHTTP(w, r)
}

// build makes the SDK's server with its tools and resources, once.
func (s *Server) build() {
	s.built.Do(func() {
		// The SDK logs every session's start and end at info; the journal has
		// what matters (tool calls), so only its warnings reach the log.
		sdkLog := slog.New(atLeast{s.log.Handler(), slog.LevelWarn})
		opts := s.o.Server
		opts.Logger = sdkLog
		s.sdk = mcp.NewServer(s.o.Implementation, &opts)
		if s.o.Add != nil {
			s.o.Add(s)
		}
		s.sdk.AddReceivingMiddleware(s.guard)
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.sdk }, &mcp.StreamableHTTPOptions{
			EventStore:     mcp.NewMemoryEventStore(nil),
			SessionTimeout: s.o.SessionIdle,
			Logger:         sdkLog,
			// The host's request policy (Host 421, Origin 403, the local
			// user's trust) judges every request before this handler, through
			// the gateway and on the service's own port alike; the SDK's own
			// loopback Host check would refuse the gateway's Host routing.
			DisableLocalhostProtection: true,
		})
		s.inner = s.bound(h)
		go s.preload()
	})
}

// preload loads the route tools of the services the agent runs, from the
// first request (a session's initialize) on, so that the session's first
// call does not wait for it (nor see the tool list change under it).
// Without Listed it gives up after a minute: tools/list and tools/call
// load what answers later.
func (s *Server) preload() {
	want := s.o.ActsFor
	if s.o.Listed != nil {
		want = slices.DeleteFunc(slices.Clone(want), func(svc string) bool { return !slices.Contains(s.o.Listed, svc) })
	}
	for start := time.Now(); s.loadTools(s.ctx, want) != nil && (s.o.Listed != nil || time.Since(start) < time.Minute); {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(healthTTL):
		}
	}
}

// Close ends every session.
func (s *Server) Close() {
	s.cancel()
	// No server is built once closing; one being built is waited for.
	s.built.Do(func() {})
	if s.sdk != nil {
		for ss := range s.sdk.Sessions() {
			_ = ss.Close()
		}
	}
	s.owners.wg.Wait()
}

// bound refuses a new session past MaxSessions (503, so a client retries
// later), answers a session bound to another credential as one that does
// not exist (404, as the SDK answers an unknown id), and marks what the
// caller may reach and who it is before the SDK sees the request.
func (s *Server) bound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		contract.MarkLocal(r)
		owner := ownerKey(r)
		r.Header.Set(ownerHeader, owner)
		if id := r.Header.Get("Mcp-Session-Id"); id != "" && !s.owners.mayUse(id, owner) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			n := 0
			for range s.sdk.Sessions() {
				n++
			}
			if n >= s.o.MaxSessions {
				reqpolicy.WriteHTTPError(w, &fault.Error{Code: fault.CodeUnavailable, Details: "sessions",
					Headers: map[string]string{"Retry-After": "5"},
					Message: "too many MCP sessions are open (--mcp-max-sessions); retry once one ends or idles out"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
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
