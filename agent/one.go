package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"

	"deckhand/platform"
	"deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/services/journal"
)

// OneConfig is what `deckhand service NAME` was asked to do.
type OneConfig struct {
	Name     string
	Listen   string
	Data     string
	Settings *Settings // nil: the defaults
	LogLevel string
	Logger   *slog.Logger
	// Journal and Notifier default to the service's log.
	Journal    contract.Journal
	Notifier   contract.Notifier
	Executable string
}

// ServeOne runs a single service alone until ctx ends. It is how the
// supervisor runs an isolated service as a child, and how an operator runs
// one service by hand. The service opens the same data (<data>/<name>) and
// gets the same settings as in-process, so --isolate never changes what it
// sees.
func ServeOne(ctx context.Context, cfg OneConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Settings == nil {
		cfg.Settings = DefaultSettings()
	}
	if _, err := Select(cfg.Name); err != nil {
		return err
	}
	if err := cfg.Settings.Validate([]string{cfg.Name}); err != nil {
		return err
	}
	desktopEnv(cfg.Settings.Display())
	entry, _ := Lookup(cfg.Name)
	exe := cfg.Executable
	if exe == "" {
		exe, _ = os.Executable()
	}
	bin, reason := entry.external(exe, cfg.Settings.Display())
	if bin != "" {
		// The service's own binary reads the same settings from the
		// environment, as it does under the supervisor.
		return syscall.Exec(bin, []string{bin, "--listen", cfg.Listen, "--data", cfg.Data},
			childEnv(append(cfg.Settings.Env(), "DECKHAND_LOG_LEVEL="+cfg.LogLevel)))
	}
	dir, db, err := contract.OpenServiceData(cfg.Data, cfg.Name)
	if err != nil {
		return err
	}
	defer db.Close()
	log := cfg.Logger.With("service", cfg.Name)
	if cfg.Journal == nil {
		// A child of an agent whose journal runs, or the journal itself,
		// writes through a sink to the journal; anything else to its log.
		sock := os.Getenv(journalSocketEnv)
		if cfg.Name == "journal" {
			sock = journal.SocketPath(cfg.Data)
		}
		if sock != "" {
			sink := journal.NewSink(journal.SinkConfig{Socket: sock, Logger: log})
			defer sink.Close()
			cfg.Journal = sink
		} else {
			cfg.Journal = contract.LogJournal{Logger: log}
		}
	}
	if cfg.Notifier == nil {
		cfg.Notifier = childNotifier(log, cfg.Data, cfg.Name)
	}
	deps := contract.ServiceDeps{Name: cfg.Name, DataDir: dir, Store: db, Logger: log, Clock: clock.SystemClock{},
		Journal: cfg.Journal, Notifier: cfg.Notifier, Common: cfg.Settings.Common, Offsets: Offsets}
	svc, err := entry.constructor(reason)(deps, cfg.Settings.Of(cfg.Name))
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Name, err)
	}
	if c, ok := svc.(contract.Closer); ok {
		defer c.Close()
	}
	host, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	log.Info("service listening", "url", "http://"+ln.Addr().String(), "pid", os.Getpid())
	debug.FreeOSMemory() // startup garbage (route tables, OpenAPI documents) goes back now
	return platform.ServeUntil(ctx, host, ln, serviceGrace)
}

// DefaultServiceAddr is a service's address for a bind host and port base.
func DefaultServiceAddr(bind string, base int, name string) string {
	return net.JoinHostPort(bind, strconv.Itoa(Port(base, name)))
}
