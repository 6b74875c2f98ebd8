package containerse2e_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// inspect answers a docker inspect --format of container id.
func (f *fixture) inspect(id, format string) string {
	f.t.Helper()
	out, err := exec.Command("docker", "-H", f.host, "inspect", "--format", format, "deckhand-"+f.inst+"-"+id).CombinedOutput()
	if err != nil {
		f.t.Fatalf("docker inspect: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestUpdate: a rename changes the record; new limits remake the engine
// container at once while it runs, and autostart at the next start while
// it is stopped; the workspace stays through both.
func TestUpdate(t *testing.T) {
	f := newFixture(t)
	id := f.create("one", map[string]any{"resources": map[string]any{"memory_mb": 256}})
	two := f.create("two", nil)
	c := f.await(id, "running", 60*time.Second)
	a := f.openAgent(id, c)
	if _, _, code := a.run("", "echo stays > /home/user/keep"); code != 0 {
		t.Fatal("write in the workspace")
	}
	path := "/api/v1/containers/" + id
	if r := f.s.Call("PATCH", path, map[string]any{"name": "TWO"}, f.alice); r.Status != 409 || !strings.Contains(string(r.Raw), "name") {
		t.Fatalf("rename to a taken name: %d %s", r.Status, r.Raw)
	}
	if c := data(f.must(200, "PATCH", path, map[string]any{"name": "renamed"}, f.alice)); c["name"] != "renamed" || c["status"] != "running" {
		t.Fatalf("rename: %v", c)
	}
	f.must(400, "PATCH", path, map[string]any{"resources": map[string]any{"memory_mb": 1}}, f.alice)

	if c := data(f.must(200, "PATCH", path, map[string]any{"resources": map[string]any{"memory_mb": 512}}, f.alice)); c["status"] != "creating" {
		t.Fatalf("new limits on a running container: %v", c)
	}
	c = f.await(id, "running", 60*time.Second)
	if mem := f.inspect(id, "{{.HostConfig.Memory}}"); mem != "536870912" {
		t.Fatalf("the engine's memory limit is %s after the change", mem)
	}
	a = f.openAgent(id, c)
	if out, _, _ := a.run("", "cat /home/user/keep"); out != "stays\n" {
		t.Fatalf("the workspace after the limits changed: %q", out)
	}

	f.must(200, "POST", path+"/stop", nil, f.alice)
	if c := data(f.must(200, "PATCH", path, map[string]any{"autostart": true}, f.alice)); c["status"] != "stopped" {
		t.Fatalf("autostart on a stopped container: %v", c)
	}
	if p := f.inspect(id, "{{.HostConfig.RestartPolicy.Name}}"); p == "unless-stopped" {
		t.Fatal("the engine container changed while stopped")
	}
	if c := data(f.must(200, "POST", path+"/start", nil, f.alice)); c["status"] != "creating" {
		t.Fatalf("start after the change: %v", c)
	}
	f.await(id, "running", 60*time.Second)
	if p := f.inspect(id, "{{.HostConfig.RestartPolicy.Name}}"); p != "unless-stopped" {
		t.Fatalf("restart policy %q after autostart", p)
	}
	f.must(200, "DELETE", path, nil, f.alice)
	f.must(200, "DELETE", "/api/v1/containers/"+two, nil, f.alice)
	if got := engineObjects(t, f.host, id); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
	kinds := strings.Join(f.events(id), ",")
	for _, k := range []string{"container.renamed", "container.resource_updated", "container.autostart_enabled"} {
		if !strings.Contains(kinds, k) {
			t.Errorf("events lack %s: %s", k, kinds)
		}
	}
}
