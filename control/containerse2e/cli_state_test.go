package containerse2e_test

import (
	"encoding/json"
	"testing"

	"deckhand/control/controltest"
)

// TestCLIState: `deckhand containers pause|resume|snapshot|snapshots|
// fork|restore|snapshot-rm|workspaces` against a real container.
func TestCLIState(t *testing.T) {
	f := newFixture(t)
	home := t.TempDir()
	f.deckhand(home, controltest.GoodPW+"\n", "login", f.s.URL, "--email", "alice@example.com", "--password-stdin")
	c := f.deckhandJSON(home, "containers", "create", "box", "--project", f.project, "--image", f.image, "--wait", "60s")
	id, _ := c["id"].(string)
	if f.inst == "" {
		f.inst = installationOf(t, f.host, id)
	}
	for _, step := range []struct{ action, want string }{{"pause", "paused"}, {"resume", "running"}} {
		if c := f.deckhandJSON(home, "containers", step.action, id); c["status"] != step.want {
			t.Fatalf("%s: %v", step.action, c)
		}
	}
	sn := f.deckhandJSON(home, "containers", "snapshot", id, "base")
	sid, _ := sn["id"].(string)
	if sid == "" || sn["name"] != "base" {
		t.Fatalf("snapshot: %v", sn)
	}
	if l := f.deckhandJSON(home, "containers", "snapshots", id); len(l["snapshots"].([]any)) != 1 {
		t.Fatalf("snapshots: %v", l)
	}
	var forks []map[string]any
	out := f.deckhand(home, "", "containers", "fork", "copy", "--project", f.project, "--snapshot", sid, "--count", "2", "--wait", "90s", "-o", "json")
	if err := json.Unmarshal([]byte(out), &forks); err != nil || len(forks) != 2 || forks[0]["status"] != "running" || forks[1]["name"] != "copy-2" {
		t.Fatalf("fork: %v\n%s", err, out)
	}
	if c := f.deckhandJSON(home, "containers", "restore", id, sid, "--wait", "60s"); c["status"] != "running" {
		t.Fatalf("restore: %v", c)
	}
	if r := f.deckhandJSON(home, "containers", "snapshot-rm", id, sid); r["deleted"] != true {
		t.Fatalf("snapshot-rm: %v", r)
	}
	for _, fc := range forks {
		f.deckhand(home, "", "containers", "rm", fc["id"].(string))
	}
	f.deckhand(home, "", "containers", "rm", id, "--keep-workspace")
	ws := f.deckhandJSON(home, "containers", "workspaces", "--project", f.project)
	if l, _ := ws["workspaces"].([]any); len(l) != 1 || l[0].(map[string]any)["id"] != id {
		t.Fatalf("workspaces: %v", ws)
	}
	if r := f.deckhandJSON(home, "containers", "workspaces", "--project", f.project, "--rm", id); r["deleted"] != true {
		t.Fatalf("workspaces --rm: %v", r)
	}
	if got := engineObjects(t, f.host, id); len(got) != 0 {
		t.Fatalf("after rm: %v", got)
	}
}
