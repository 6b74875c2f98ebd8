package exec_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"deckhand/services/exec"
)

// A scheduled run in progress keeps the container busy (the control
// plane's idle stop); once it ends the service is idle from that moment.
func TestRunInProgressIsActivity(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "release")
	f := newFixture(t, "schedules:\n  - {name: wait, schedule: '@yearly', command: 'while [ ! -e "+release+" ]; do sleep 0.05; done'}\n", nil)
	if a := f.svc.Activity(); len(a.Busy) != 0 || !a.Last.IsZero() {
		t.Fatalf("before any run: %+v", a)
	}
	if _, err := f.svc.Trigger(context.Background(), exec.TriggerRequest{Name: "wait"}); err != nil {
		t.Fatal(err)
	}
	if a := f.svc.Activity(); a.Busy["exec_run"] != 1 {
		t.Fatalf("during the run: %+v", a)
	}
	before := time.Now()
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.waitRuns(t, "wait", 30*time.Second, finished(1))
	if a := f.svc.Activity(); len(a.Busy) != 0 || a.Last.Before(before) {
		t.Fatalf("after the run: %+v (it ended after %v)", a, before)
	}
}
