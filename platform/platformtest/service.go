package platformtest

import (
	"io"
	"log/slog"
	"testing"

	"deckhand/platform"
)

// ServiceDeps is what the agent hands a service's New, for a test: the
// service's name, a fresh temporary DataDir, the system clock and a logger
// that discards.
func ServiceDeps(t testing.TB, name string) platform.ServiceDeps {
	return platform.ServiceDeps{Name: name, DataDir: t.TempDir(), Clock: platform.SystemClock{}, Logger: quiet()}
}

// ServiceHost is the host a service's tests drive: info titles its OpenAPI
// document, routes is its route table, and its logs are discarded.
func ServiceHost(info platform.Info, routes []platform.Route) *platform.Host {
	return platform.NewHost(platform.HostConfig{Info: info, Logger: quiet()}, routes)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
