package agent

import (
	"context"
	"sync"
	"time"
)

// The order services start in. A new container's first request is most
// often a command or a file (the SDKs' create-then-run), and on a small
// machine every service building its store and routes at once puts that
// request behind all of them. So the services in startFirst start alone;
// the rest start restDelay after those answer their first health check
// (or after startFirstWait whatever they do: a service that cannot start
// never holds the others back for long), or at once when the gateway is
// asked for one of them: a request never waits for the delay, only for
// its service's own start (its listener is bound from the beginning, so
// the connection waits in its backlog).
var startFirst = map[string]bool{"process": true, "files": true}

const (
	startFirstWait = time.Second
	// restDelay is long enough for a client that saw the container
	// running to have its first command answered on a quiet machine.
	restDelay = 250 * time.Millisecond
)

// startOrder is when the services after startFirst may start.
type startOrder struct {
	delay  time.Duration // restDelay
	once   sync.Once
	wanted chan struct{} // closed when a request asks for one of them
}

func newStartOrder() *startOrder { return &startOrder{delay: restDelay, wanted: make(chan struct{})} }

// want records that a request is for service name.
func (o *startOrder) want(name string) {
	if !startFirst[name] {
		o.once.Do(func() { close(o.wanted) })
	}
}

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
			wg.Go(func() { u.run(ctx) })
		}
	}
	start(first)
	if len(rest) == 0 {
		return
	}
	wg.Go(func() {
		wait, cancel := context.WithTimeout(ctx, startFirstWait)
		defer cancel()
		for _, u := range first {
			select {
			case <-u.ready:
			case <-wait.Done():
			case <-s.order.wanted:
			}
		}
		delay := time.NewTimer(s.order.delay)
		defer delay.Stop()
		select {
		case <-delay.C:
		case <-s.order.wanted:
		case <-ctx.Done():
		}
		if ctx.Err() == nil {
			start(rest)
		}
	})
}
