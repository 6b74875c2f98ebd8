package agent

import (
	"testing"
	"time"

	"deckhand/platform/contract"
)

// TestIdleCountsFromALeaseEnd: once a lease has expired, every later
// report counts idleness from its end, not only the first one (which
// drops the lease's entry).
func TestIdleCountsFromALeaseEnd(t *testing.T) {
	t0 := time.Now()
	s := newIdleState(func() (int, int, time.Time) { return 0, 0, t0 }, func() []contract.ActivityReporter { return nil })
	s.started = t0
	end := t0.Add(16 * time.Second)
	s.leases["lse_a"] = Lease{ID: "lse_a", ExpiresAt: end}
	if r := s.report(t0.Add(10 * time.Second)); !r.Busy || r.Activity["lease"] != 1 {
		t.Fatalf("under a lease: %+v, want busy with a lease", r)
	}
	for _, at := range []time.Duration{17 * time.Second, 20 * time.Second, 24 * time.Second} {
		r := s.report(t0.Add(at))
		if want := (at - 16*time.Second).Seconds(); r.Busy || r.IdleSeconds != want {
			t.Fatalf("report at +%s: %+v, want idle %.0fs (since the lease ended)", at, r, want)
		}
	}
	if len(s.leases) != 0 {
		t.Fatalf("the expired lease is still listed: %v", s.leases)
	}
}
