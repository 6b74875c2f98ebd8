// Package timeloop owns the loop that runs time-driven work (the exec
// service's schedules, the cron service's built-in runner). robfig/cron
// parses expressions and computes next times; its own Cron runs on the wall
// clock only and cannot catch up, so the loop is ours: it wakes at the next
// due time, on demand, and at least every second, so a clock that jumps
// (suspend, NTP, a test's fake clock) is noticed within a second.
package timeloop

import (
	"context"
	"time"

	clockpkg "deckhand/platform/clock"
)

const (
	// MaxSleep bounds a sleep, so a jumping clock is noticed.
	MaxSleep = time.Second
	// minSleep keeps a step that answers a time already past from
	// spinning.
	minSleep = 10 * time.Millisecond
)

// Run runs step until ctx ends. step does what is due at now and answers
// when something is due next (the zero time: nothing). The loop then sleeps
// until that time, at most MaxSleep, or until a value arrives on wake.
func Run(ctx context.Context, clock clockpkg.Clock, wake <-chan struct{}, step func(now time.Time) (next time.Time)) {
	for {
		next := step(clock.Now())
		wait := MaxSleep
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(clock.Now()), minSleep))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}
