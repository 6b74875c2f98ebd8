package containerse2e_test

import (
	"strings"
	"testing"
	"time"

	"deckhand/control/runtime/runtimetest"
)

// TestEngineRestart restarts the engine under a running control plane (a
// dockerd of the test's own: it stops every container, as on a host's
// reboot, and starts those with a restart policy again). The records
// follow without a request: the autostart container is running again, its
// agent enrolled and answering; the other is stopped with a reason; none
// is failed while the engine was away; and a delete leaves nothing.
func TestEngineRestart(t *testing.T) {
	host, restart := runtimetest.DockerdRestartable(t)
	f := newFixtureOn(t, host)
	auto := f.create("auto", map[string]any{"autostart": true})
	plain := f.create("plain", nil)
	f.await(auto, "running", 90*time.Second)
	f.await(plain, "running", 90*time.Second)

	restart()

	c := f.await(auto, "running", 90*time.Second)
	if _, _, code := f.openAgent(auto, c).run("", "true"); code != 0 {
		t.Fatal("the autostart container's agent after the engine restart runs nothing")
	}
	c = f.await(plain, "stopped", 60*time.Second)
	if r, _ := c["status_reason"].(string); r == "" {
		t.Fatalf("the stopped container has no reason: %v", c)
	}
	for _, id := range []string{auto, plain} {
		if kinds := lifecycleKinds(f.events(id)); strings.Contains(kinds, "failed") {
			t.Fatalf("container %s went through failed while the engine restarted: %s", id, kinds)
		}
	}
	if got := lifecycleKinds(f.events(plain)); got != "creating,running,stopped" {
		t.Fatalf("events of the container without autostart: %s", got)
	}
	for _, id := range []string{auto, plain} {
		f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
		if got := engineObjects(t, host, id); len(got) != 0 {
			t.Fatalf("after delete the engine holds %v", got)
		}
	}
}
