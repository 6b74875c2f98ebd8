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

// Describer is implemented by services that title their own OpenAPI
// document; the agent uses Info() for the service's host (Name is forced to
// the registered service name so /health reports it).
type Describer interface {
	Info() Info
}

// HealthReporter is implemented by services that can be up but unable to do
// their work (the display service without an X display): the host's /health
// then reports that status ("unavailable") and why.
type HealthReporter interface {
	HealthStatus() (status, detail string)
}
