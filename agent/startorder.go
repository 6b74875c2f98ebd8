package agent

import (
	"context"
	"sync"
	"time"
)

// The order services start in. A new container's first request is most
// often a command or a file (the SDKs' create-then-run), and on a small
// machine every service building its store and routes at once puts that
// request behind all of them. So the services in startFirst start alone,
// and the rest once those answer their first health check, or after
// startFirstWait whatever they do: a service that cannot start never
// holds the others back for long.
var startFirst = map[string]bool{"process": true, "files": true}

const startFirstWait = time.Second

// startUnits runs every unit until ctx ends, each counted in wg.
func (s *Supervisor) startUnits(ctx context.Context, wg *sync.WaitGroup) {
	var first, rest []*unit
	for _, u := range s.units {
		if startFirst[u.name] {
			first = append(first, u)
		} else {
			rest = append(rest, u)
		}
	}
	start := func(us []*unit) {
		for _, u := range us {
			wg.Add(1)
			go func() { defer wg.Done(); u.run(ctx) }()
		}
	}
	start(first)
	if len(rest) == 0 {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		wait, cancel := context.WithTimeout(ctx, startFirstWait)
		defer cancel()
		for _, u := range first {
			select {
			case <-u.ready:
			case <-wait.Done():
			}
		}
		if ctx.Err() == nil {
			start(rest)
		}
	}()
}
