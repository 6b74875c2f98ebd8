package containerse2e_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/control/runtime/runtimetest"
)

// count is how many containers project holds for its owner.
func (f *fixture) count() int {
	f.t.Helper()
	r := f.must(200, "GET", "/api/v1/projects/"+f.project+"/containers", nil, f.alice)
	return int(data(r)["pagination"].(map[string]any)["total"].(float64))
}

// TestCreateRefusals: every bad create names its field and rule, and
// leaves no record and nothing in the engine; roles decide who creates,
// acts and deletes.
func TestCreateRefusals(t *testing.T) {
	f := newFixture(t, "--max-containers-per-project", "1")
	priced := f.publish(f.ref, "5")
	body := func(kv ...any) map[string]any {
		b := map[string]any{"project_id": f.project, "name": "x", "image_id": f.image}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		field  string
	}{
		{"unknown image", body("image_id", "img_000000000000000000000000"), 400, "image_id"},
		{"malformed image", body("image_id", "nope"), 400, "image_id"},
		{"priced image not bought", body("image_id", priced), 403, "image_id"},
		{"too few cpus", body("resources", map[string]any{"cpus": 0.01}), 400, "resources.cpus"},
		{"too many cpus", body("resources", map[string]any{"cpus": 65}), 400, "resources.cpus"},
		{"too little memory", body("resources", map[string]any{"memory_mb": 16}), 400, "resources.memory_mb"},
		{"agent's variable", body("env", map[string]any{"DECKHAND_TOKEN": "x"}), 400, "env"},
		{"bad variable", body("env", map[string]any{"1X": "x"}), 400, "env"},
		{"unknown project", body("project_id", "nosuchproject"), 404, "project_id"},
		{"unknown field", body("image", "busybox"), 400, "image"},
		{"no name", body("name", ""), 400, "name"},
	} {
		r := f.s.Call("POST", "/api/v1/containers", tc.body, f.alice)
		if r.Status != tc.status || !strings.Contains(string(r.Raw), tc.field) {
			t.Errorf("%s: %d %s, want %d naming %s", tc.name, r.Status, r.Raw, tc.status, tc.field)
		}
	}
	if n := f.count(); n != 0 {
		t.Fatalf("refused creates left %d records", n)
	}

	// Roles: a viewer and an operator may not create; a stranger does not
	// learn the project exists; an admin creates in any project.
	bobID, bob := f.s.User(f.admin, "bob@example.com")
	opID, op := f.s.User(f.admin, "op@example.com")
	_, carol := f.s.User(f.admin, "carol@example.com")
	f.must(201, "POST", "/api/v1/projects/"+f.project+"/permissions", map[string]any{"user_id": bobID, "role": "viewer"}, f.alice)
	f.must(201, "POST", "/api/v1/projects/"+f.project+"/permissions", map[string]any{"user_id": opID, "role": "operator"}, f.alice)
	f.must(403, "POST", "/api/v1/containers", body(), bob)
	f.must(403, "POST", "/api/v1/containers", body(), op)
	if r := f.s.Call("POST", "/api/v1/containers", body(), carol); r.Status != 404 || !strings.Contains(string(r.Raw), "project_id") {
		t.Fatalf("a stranger's create: %d %s", r.Status, r.Raw)
	}

	id := f.create("first", nil)
	// The quota and the name, both before anything is made.
	if r := f.s.Call("POST", "/api/v1/containers", body("name", "second"), f.alice); r.Status != 409 || !strings.Contains(string(r.Raw), "max-containers-per-project") {
		t.Fatalf("over the quota: %d %s", r.Status, r.Raw)
	}
	f.await(id, "running", 60*time.Second)
	f.must(403, "POST", "/api/v1/containers/"+id+"/stop", nil, bob)
	f.must(403, "DELETE", "/api/v1/containers/"+id, nil, bob)
	f.must(403, "POST", "/api/v1/containers/"+id+"/start", nil, carol)
	f.must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, op)
	f.must(403, "DELETE", "/api/v1/containers/"+id, nil, op)
	f.must(200, "GET", "/api/v1/containers/"+id, nil, bob)
	if l := data(f.must(200, "GET", "/api/v1/containers?project_id="+f.project, nil, bob)); l["pagination"].(map[string]any)["total"] != 1.0 {
		t.Fatalf("a viewer's list: %v", l)
	}
	f.must(404, "GET", "/api/v1/containers?project_id="+f.project, nil, carol)
	f.must(400, "GET", "/api/v1/containers", nil, carol)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	left, err := runtimetest.Leftovers(ctx, f.host, f.inst, "")
	if err != nil || len(left) != 2 {
		t.Fatalf("the installation holds %v (%v), want the one container and its volume", left, err)
	}
	f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.admin)
	if got := engineObjects(t, f.host, id); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

// TestFailedWithReasons: a catalog image the engine lacks, and an agent
// that never enrols, end failed with a reason a person can act on.
func TestFailedWithReasons(t *testing.T) {
	f := newFixture(t, "--enroll-timeout", "3s")
	missing := f.publish("deckhand-containerse2e/absent:"+runtimetest.RandomName(), "0")
	id := f.create("nothing", map[string]any{"image_id": missing})
	c := f.await(id, "failed", 30*time.Second)
	if r, _ := c["status_reason"].(string); !strings.Contains(r, "is not in the container engine") {
		t.Fatalf("missing image: reason %q", r)
	}
	if got := engineObjects(t, f.host, id); len(got) != 0 {
		t.Fatalf("a missing image left %v", got)
	}

	// A container that runs but whose program never calls the control
	// plane.
	silent := f.publish(image(t, f.host, `["/bin/sh", "-c", "exec sleep 600"]`), "0")
	id = f.create("silent", map[string]any{"image_id": silent})
	c = f.await(id, "failed", 30*time.Second)
	if r, _ := c["status_reason"].(string); !strings.Contains(r, "never enrolled within 3s") {
		t.Fatalf("silent agent: reason %q", r)
	}
	if got := lifecycleKinds(f.events(id)); got != "creating,failed" {
		t.Fatalf("events %s", got)
	}
	f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
	if got := engineObjects(t, f.host, id); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

// TestReconcile: a control plane killed during a create finishes it when
// it starts again; a container killed or removed behind its back is
// recorded as the engine says, with the events.
func TestReconcile(t *testing.T) {
	r := newRestartable(t)
	f, host := r.fixture, r.host

	id := f.create("crash", nil)
	r.restart()
	f.await(id, "running", 60*time.Second)
	if got := engineObjects(t, host, id); len(got) != 2 {
		t.Fatalf("after the restart the engine holds %v, want one container and its volume", got)
	}

	docker := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("docker", append([]string{"-H", host}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("docker %v: %v %s", args, err, out)
		}
	}
	name := "deckhand-" + f.inst + "-" + id
	docker("kill", name)
	c := f.await(id, "stopped", 20*time.Second)
	if r, _ := c["status_reason"].(string); !strings.Contains(r, "outside the control plane") {
		t.Fatalf("killed: reason %q", r)
	}
	f.must(200, "POST", "/api/v1/containers/"+id+"/start", nil, f.alice)
	f.await(id, "running", 5*time.Second)
	docker("rm", "-f", name)
	c = f.await(id, "failed", 20*time.Second)
	if r, _ := c["status_reason"].(string); !strings.Contains(r, "removed outside the control plane") {
		t.Fatalf("removed: reason %q", r)
	}
	// Start makes it again from its record.
	if c := data(f.must(200, "POST", "/api/v1/containers/"+id+"/start", nil, f.alice)); c["status"] != "creating" {
		t.Fatalf("start after removal: %v", c)
	}
	f.await(id, "running", 60*time.Second)
	// docker rm -f kills first: the engine may report the exit before the
	// removal, and the record follows both.
	got := lifecycleKinds(f.events(id))
	if got != "creating,running,stopped,running,failed,creating,running" && got != "creating,running,stopped,running,stopped,failed,creating,running" {
		t.Fatalf("events %s", got)
	}
	f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
	if got := engineObjects(t, host, id); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

// TestRecordsOnly: with --runtime none a container is a record, every
// answer says so, and the engine is not asked anything.
func TestRecordsOnly(t *testing.T) {
	s := controltest.Start(t, "--runtime", "none")
	admin := s.Admin()
	_, alice := s.User(admin, "alice@example.com")
	pid := data(s.Must(s.Call("POST", "/api/v1/projects", map[string]any{"name": "p"}, alice), 201))["id"].(string)
	img := data(s.Must(s.Call("POST", "/api/v1/admin/images", map[string]any{"alias": "a", "image_name": "deckhand/base:none",
		"architecture": "amd64", "os": "debian"}, admin), 201))["id"].(string)
	c := data(s.Must(s.Call("POST", "/api/v1/containers", map[string]any{"project_id": pid, "name": "rec", "image_id": img}, alice), 201))
	if c["runtime"] != "none" || !strings.Contains(c["status_reason"].(string), "--runtime none") {
		t.Fatalf("create under --runtime none: %v", c)
	}
	id := c["id"].(string)
	if g := data(s.Must(s.Call("GET", "/api/v1/containers/"+id, nil, alice), 200)); g["status"] != "creating" || g["runtime"] != "none" {
		t.Fatalf("get: %v", g)
	}
	if r := s.Call("POST", "/api/v1/containers/"+id+"/start", nil, alice); r.Status != 409 || !strings.Contains(string(r.Raw), "--runtime none") {
		t.Fatalf("start: %d %s", r.Status, r.Raw)
	}
	s.Must(s.Call("DELETE", "/api/v1/containers/"+id, nil, alice), 200)

	if out, err := controltest.Out("serve", "--runtime", "kubernetes", "--data", t.TempDir()); err == nil || !strings.Contains(out, "needs --agent-control-url") {
		t.Fatalf("--runtime kubernetes without --agent-control-url: %v %s", err, out)
	}
	if out, err := controltest.Out("serve", "--runtime", "kubernetes", "--agent-control-url", "http://10.0.0.1:7000",
		"--kube-pull-policy", "Sometimes", "--data", t.TempDir()); err == nil || !strings.Contains(out, "--kube-pull-policy") {
		t.Fatalf("--kube-pull-policy Sometimes: %v %s", err, out)
	}
}
