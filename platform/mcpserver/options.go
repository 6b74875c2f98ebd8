package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
	"deckhand/platform/contract"
)

// Options configure a Server.
type Options struct {
	// Own is the server's own service: its tools (Own_*) are always
	// offered and need nothing beyond admission to it.
	Own string
	// ActsFor are the services whose route tools the server offers.
	ActsFor []string
	// Listed are the services the agent runs; nil: not known, a service
	// whose port answers counts.
	Listed []string
	// Budget is the characters of text a tool answers by default.
	Budget      int
	MaxSessions int
	SessionIdle time.Duration
	// Implementation and Server are the SDK's; Server's Logger is set
	// here.
	Implementation *mcp.Implementation
	Server         mcp.ServerOptions
	// ResourceOf is the service a resource URI reads and the tool that
	// reads the same thing ("" for none).
	ResourceOf func(uri string) (service, tool string)
	// Add adds the tools that are no route and the resources, once the
	// SDK's server is built (on the first request).
	Add func(*Server)
	// Ended is told of every session that ends.
	Ended func(id string)
	Deps  contract.ServiceDeps
	// Client reaches the services on their ports (a service that runs as
	// a child, and the health of each).
	Client *platform.ServiceClient
}

// Server is the MCP server of one agent.
type Server struct {
	o       Options
	log     *slog.Logger
	running *running
	catalog catalog
	owners  owners

	ctx    context.Context
	cancel context.CancelFunc

	// built makes sdk, its tools and inner (the SDK's handler) on the first
	// request: most containers never open a session, and both cost every
	// agent's start CPU and megabytes of heap kept for as long as it runs.
	built sync.Once
	sdk   *mcp.Server
	inner http.Handler
}
