package timeloop_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/timeloop"
)

// TestLoopNoticesAJumpingClock: with nothing due for an hour, moving the
// clock past that hour runs the step within the loop's bounded sleep, and
// a wake runs it at once; cancelling the context ends the loop.
func TestLoopNoticesAJumpingClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clockpkg.NewFakeClock(start)
	due := start.Add(time.Hour)
	fired := make(chan time.Time, 10)
	var steps atomic.Int32
	wake := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		timeloop.Run(ctx, clock, wake, func(now time.Time) time.Time {
			steps.Add(1)
			if !now.Before(due) {
				fired <- now
				due = due.Add(time.Hour)
			}
			return due
		})
	}()
	clock.Advance(time.Hour)
	select {
	case at := <-fired:
		if at.Before(start.Add(time.Hour)) {
			t.Fatalf("fired at %v, before it was due", at)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a clock moved past a due time never ran the step")
	}
	before := steps.Load()
	wake <- struct{}{}
	for steps.Load() == before {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop outlived its context")
	}
}
