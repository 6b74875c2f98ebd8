package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"

	"deckhand/platform"
	"deckhand/platform/store"
)

// OneConfig is what `deckhand service NAME` was asked to do.
type OneConfig struct {
	Name    string
	Listen  string
	Data    string
	Display string
	// Domain and AllowedOrigins configure the request policy (--domain,
	// --allowed-origins), as for `deckhand run`.
	Domain            string
	AllowedOrigins    []string
	TrustProxyHeaders bool
	LogLevel          string
	Logger            *slog.Logger
	Executable        string
}

// ServeOne runs a single service alone until ctx ends. It is how the
// supervisor runs an isolated service as a child (the child keeps its state
// in <data>/<name>.db, since the agent holds <data>/agent.db), and how an
// operator runs one service by hand.
func ServeOne(ctx context.Context, cfg OneConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if _, err := Select(cfg.Name); err != nil {
		return err
	}
	entry, _ := Lookup(cfg.Name)
	if cfg.Domain == "" {
		cfg.Domain = "localhost"
	}
	policy, err := platform.NewRequestPolicy(cfg.Domain, cfg.AllowedOrigins)
	if err != nil {
		return err
	}
	if cfg.Data == "" {
		return errors.New("--data: must not be empty")
	}
	exe := cfg.Executable
	if exe == "" {
		exe, _ = os.Executable()
	}
	bin, reason := entry.external(exe, cfg.Display)
	if bin != "" {
		args := []string{bin, "--listen", cfg.Listen, "--data", cfg.Data}
		args = append(args, policyArgs(cfg.Domain, cfg.AllowedOrigins)...)
		if cfg.TrustProxyHeaders {
			args = append(args, "--trust-proxy-headers")
		}
		if entry.NeedsDisplay {
			args = append(args, "--display", cfg.Display)
		}
		return syscall.Exec(bin, args, os.Environ())
	}
	dbPath := filepath.Join(cfg.Data, cfg.Name+".db")
	db, err := store.Open(dbPath)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("service %s is already running on --data %s (%s is locked)", cfg.Name, cfg.Data, dbPath)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	dir := filepath.Join(cfg.Data, cfg.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	log := cfg.Logger.With("service", cfg.Name)
	svc, err := entry.constructor(reason)(platform.ServiceDeps{Name: cfg.Name, DataDir: dir, Store: db, Logger: log,
		Clock: platform.SystemClock{}, Options: serviceOptions(cfg.Display, "", "", "", "")})
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Name, err)
	}
	if c, ok := svc.(platform.Closer); ok {
		defer c.Close()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	host := newHost(cfg.Name, svc, cfg.Logger, policy, cfg.TrustProxyHeaders)
	done := make(chan error, 1)
	go func() { done <- host.Serve(ln) }()
	log.Info("service listening", "url", "http://"+ln.Addr().String(), "pid", os.Getpid())
	debug.FreeOSMemory() // startup garbage (route tables, OpenAPI documents) goes back now
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), serviceGrace)
	defer cancel()
	_ = host.Shutdown(sctx)
	_ = ln.Close()
	<-done
	return nil
}

// DefaultServiceAddr is a service's address for a bind host and port base.
func DefaultServiceAddr(bind string, base int, name string) string {
	return net.JoinHostPort(bind, strconv.Itoa(Port(base, name)))
}
