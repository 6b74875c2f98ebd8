package mcpserver

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"deckhand/platform"
)

// healthTTL is how long a probe of the services' health is kept: tools/list
// does not probe on every call, and a display that comes or goes shows
// within it.
const healthTTL = 2 * time.Second

// running says which services the tools call can do their work on this
// agent: those the agent runs (Options.Listed), less any whose /health
// says it cannot right now (the display service without a display). A
// tool of any other service is left out of tools/list; called anyway, it
// answers the service's own UNAVAILABLE.
type running struct {
	be       *platform.ServiceClient
	services []string
	// listed nil: not known, so a service is taken to run when its port
	// answers.
	listed []string

	mu      sync.Mutex
	checked time.Time
	down    map[string]bool
}

// runs answers whether service's tools are offered now. The server's own
// (own_*) always are.
func (r *running) runs(ctx context.Context, own string) func(service string) bool {
	down := r.probe(ctx)
	return func(service string) bool {
		if service == own {
			return true
		}
		if r.listed != nil && !slices.Contains(r.listed, service) {
			return false
		}
		return !down[service]
	}
}

// probe reads the health of every service the tools call, at most once
// per healthTTL. A listed service that does not answer is starting or
// restarting and counts as up (the agent runs it); an unlisted one that
// does not answer is not there.
func (r *running) probe(ctx context.Context) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down != nil && time.Since(r.checked) < healthTTL {
		return r.down
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		down = map[string]bool{}
	)
	for _, svc := range r.services {
		if r.listed != nil && !slices.Contains(r.listed, svc) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h platform.Health
			err := r.be.JSON(ctx, platform.ServiceCall{Method: http.MethodGet, Service: svc, Path: "/health"}, &h)
			if (err != nil && r.listed == nil) || (err == nil && h.Status != "ok") {
				mu.Lock()
				down[svc] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() == nil || r.down == nil {
		r.down, r.checked = down, time.Now()
	}
	return down
}
