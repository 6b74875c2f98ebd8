package daemon_test

import (
	"testing"
	"time"

	"deckhand/services/daemon"
)

// A job (restart never) keeps the container busy while it runs, and its
// end is the activity's last moment; a server restarted by its policy
// never counts as busy.
func TestJobsCountAsActivity(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	if a := f.svc.Activity(); len(a.Busy) != 0 || !a.Last.IsZero() {
		t.Fatalf("no program, activity %+v", a)
	}
	f.put(t, "server", map[string]any{"command": "/bin/sleep", "args": []string{"600"}, "restart": "always", "start_seconds": 0.05})
	f.waitState(t, "server", daemon.StateRunning, 10*time.Second)
	if a := f.svc.Activity(); len(a.Busy) != 0 {
		t.Fatalf("a running server counts as busy: %+v", a)
	}
	before := time.Now()
	f.put(t, "job", map[string]any{"command": "/bin/sleep", "args": []string{"1"}, "restart": "never", "start_seconds": 0.05})
	f.waitState(t, "job", daemon.StateRunning, 10*time.Second)
	if a := f.svc.Activity(); a.Busy["daemon_job"] != 1 {
		t.Fatalf("a running job is not busy: %+v", a)
	}
	f.waitState(t, "job", daemon.StateExited, 10*time.Second)
	end := time.Now().Add(5 * time.Second)
	for {
		a := f.svc.Activity()
		if len(a.Busy) == 0 && a.Last.After(before) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("an ended job still busy or no end recorded: %+v", a)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
