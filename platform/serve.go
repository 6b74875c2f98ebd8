package platform

import (
	"context"
	"fmt"
	"net"
	"time"
)

// NewServiceHost puts a container service on its own host, the one way
// every runner does it (the agent in-process, `deckhand service NAME`,
// deckhand-display, platformtest): the service's Info titles its OpenAPI
// document with Name forced to deps.Name so /health reports it, a
// HealthReporter feeds /health, and the common settings choose whether
// X-Forwarded-For is trusted.
func NewServiceHost(svc ContainerService, deps ServiceDeps) *Host {
	info := svc.Info()
	if deps.Name != "" {
		info.Name = deps.Name
	}
	cfg := HostConfig{Info: info, Logger: deps.Logger}
	if deps.Common.TrustProxyHeaders {
		cfg.ProxyHeader = "X-Forwarded-For"
	}
	if bs, ok := svc.(BodyStreamer); ok {
		cfg.StreamRequestBody = true
		cfg.ReadTimeout = bs.StreamsBodies()
	}
	if hr, ok := svc.(HealthReporter); ok {
		cfg.HealthStatus = hr.HealthStatus
	}
	return NewHost(cfg, svc.Routes())
}

// ServeUntil serves h on ln until ctx ends, then stops accepting and lets
// requests in flight finish for at most grace. It returns nil after a stop
// asked for through ctx, and the host's error when it stops by itself (the
// listener failed); a panic escaping the server is returned as an error so
// a supervisor can restart the service. ln is closed on return.
func ServeUntil(ctx context.Context, h *Host, ln net.Listener, grace time.Duration) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		done <- h.Serve(ln)
	}()
	select {
	case err := <-done:
		_ = ln.Close()
		if err == nil {
			err = fmt.Errorf("stopped serving")
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := h.Shutdown(sctx); err != nil {
		h.cfg.Logger.Warn("shutdown", "service", h.cfg.Info.Name, "err", err)
	}
	_ = ln.Close()
	<-done
	return nil
}
