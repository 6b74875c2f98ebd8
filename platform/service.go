package platform

import (
	"log/slog"

	"deckhand/platform/store"
)

// ServiceDeps is what the agent hands every container service's New. A
// service keeps its state in Store under its own bucket names (prefixed with
// the service name) and its files under DataDir.
type ServiceDeps struct {
	Name    string
	DataDir string // this service's own directory under --data, created
	Store   *store.DB
	Logger  *slog.Logger
	Clock   Clock
	// Options carries service-specific settings the agent's flags set, e.g.
	// "display" → ":99" for the display service.
	Options map[string]string
}

// Closer is implemented by services that hold processes, sessions or files
// and must release them when the agent stops.
type Closer interface {
	Close() error
}
