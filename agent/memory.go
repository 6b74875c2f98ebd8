package agent

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Returning the heap to the system while the agent is idle. The runtime
// keeps freed heap pages for reuse up to about twice the live heap, and
// gives them back only slowly: an agent that served a burst (its start,
// an enrollment, a file transfer) then sits idle for hours would hold
// that peak resident, multiplied by every idle container on a machine.
// When the agent has nothing in flight (no request, session, process or
// lease: idle.go) and holds a few MiB of free heap, it hands them back in
// one step, at most once a look; while it is busy nothing changes. The
// cost is a collection of a heap of a few MiB.
const (
	memoryLook     = 10 * time.Second
	memoryFreeMore = 2 << 20 // free heap worth a release
)

// releaseIdleMemory runs until ctx ends.
func (s *Supervisor) releaseIdleMemory(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	t := time.NewTicker(memoryLook)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.idle.report(time.Now()).Busy {
			continue
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() >= memoryFreeMore {
			debug.FreeOSMemory()
		}
	}
}
