package containerse2e_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/control/runtime/runtimetest"
	"deckhand/platform/platformtest"
)

// TestServersRunContainers runs containers on two servers, each a dockerd
// of the test's own: placement by capacity (one each), draining (the
// drained server gets none though it has more room), routing by
// server_name through the platform proxy (another server's name is 404),
// moving a stopped container's workspace from one to the other (a file
// written before is there after), and nothing left on either engine.
func TestServersRunContainers(t *testing.T) {
	hostA, hostB := runtimetest.Dockerd(t), runtimetest.Dockerd(t)
	proxyAddr := "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	f := newFixture(t, "--proxy-listen", proxyAddr, "--proxy-wake-timeout", "60s")
	for _, h := range []string{hostA, hostB} {
		runtimetest.AgentImageAs(t, h, f.ref, agentBin, `["/usr/local/bin/deckhand"]`)
	}
	srv := func(name, host string, capacity int) string {
		id := data(f.must(201, "POST", "/api/v1/admin/servers", map[string]any{"name": name, "region": "eu", "price": "0"}, f.admin))["id"].(string)
		f.endpoint(id, host, capacity)
		return id
	}
	alpha, beta := srv("alpha", hostA, 1), srv("beta", hostB, 1)

	// Placement: room for one on each, so two containers go one to each
	// (alpha first: equal room, then by name); a third finds none.
	c1, c2 := f.create("one", nil), f.create("two", nil)
	r1, r2 := f.await(c1, "running", 90*time.Second), f.await(c2, "running", 90*time.Second)
	if r1["server_id"] != alpha || r2["server_id"] != beta {
		t.Fatalf("placed on %v and %v, want %s and %s", r1["server_id"], r2["server_id"], alpha, beta)
	}
	inst := installationOf(t, hostA, c1)
	// The local engine holds the agents' network: purged at the end.
	f.inst = inst
	if inst == "" || installationOf(t, hostB, c2) != inst || len(engineObjects(t, hostB, c1)) != 0 || len(engineObjects(t, hostA, c2)) != 0 ||
		len(engineObjects(t, f.host, c1)) != 0 {
		t.Fatalf("engine objects: alpha %v, beta %v", engineObjects(t, hostA, c1), engineObjects(t, hostB, c2))
	}
	full := f.s.Call("POST", "/api/v1/containers", map[string]any{"project_id": f.project, "name": "three", "image_id": f.image}, f.alice)
	if full.Status != 409 || !strings.Contains(string(full.Raw), "room") {
		t.Fatalf("create with every server full: %d %s", full.Status, full.Raw)
	}

	// Draining: alpha has more room than beta, yet gets none.
	f.endpoint(alpha, hostA, 4)
	f.endpoint(beta, hostB, 3)
	if d := data(f.must(200, "POST", "/api/v1/admin/servers/"+alpha+"/drain", nil, f.admin)); d["draining"] != true {
		t.Fatalf("drain answered %v", d)
	}
	c3 := f.create("three", nil)
	if r3 := f.await(c3, "running", 90*time.Second); r3["server_id"] != beta {
		t.Fatalf("with alpha draining, placed on %v", r3["server_id"])
	}
	// Its containers keep running.
	if r := f.await(c1, "running", time.Second); r["server_id"] != alpha {
		t.Fatalf("c1 after the drain: %v", r)
	}
	f.must(200, "POST", "/api/v1/admin/servers/"+alpha+"/undrain", nil, f.admin)

	// Routing: the URL carries the server's name; a Host naming another
	// server's name for that container is 404.
	_, port, _ := strings.Cut(proxyAddr, ":")
	url1 := r1["urls"].(map[string]any)["process"].(string)
	if want := "http://" + f.project + "-" + c1 + "-process-1.alpha.localhost:" + port; url1 != want {
		t.Fatalf("url %s, want %s", url1, want)
	}
	a1 := f.openAgent(c1, r1)
	if _, _, code := a1.run("user", "echo moved-with-me > /home/user/marker"); code != 0 {
		t.Fatal("write the marker")
	}
	run := url1 + "/api/v1/process/run"
	if code, out := through(t, proxyAddr, "POST", run, map[string]any{"shell": "cat /home/user/marker"}, probeHeader, probeKey); code != 200 || !strings.Contains(out, "moved-with-me") {
		t.Fatalf("through the proxy by alpha: %d %s", code, out)
	}
	for _, other := range []string{"beta", "local"} {
		if code, out := through(t, proxyAddr, "POST", strings.Replace(run, ".alpha.", "."+other+".", 1), map[string]any{"shell": "true"}, probeHeader, probeKey); code != 404 {
			t.Fatalf("through the proxy by %s: %d %s", other, code, out)
		}
	}

	// Moving: admin only, a stopped container, a known server.
	move := "/api/v1/admin/containers/" + c1 + "/move"
	if r := f.s.Call("POST", move, map[string]any{"server_id": beta}, f.alice); r.Status != 403 {
		t.Fatalf("user move: %d %s", r.Status, r.Raw)
	}
	if r := f.s.Call("POST", move, map[string]any{"server_id": "no such"}, f.admin); r.Status != 400 || !strings.Contains(string(r.Raw), "server_id") {
		t.Fatalf("bad server_id: %d %s", r.Status, r.Raw)
	}
	if r := f.s.Call("POST", move, map[string]any{"server_id": beta}, f.admin); r.Status != 409 {
		t.Fatalf("move of a running container: %d %s", r.Status, r.Raw)
	}
	f.must(200, "POST", "/api/v1/containers/"+c1+"/stop", nil, f.alice)
	if r := f.s.Call("POST", move, map[string]any{"server_id": alpha}, f.admin); r.Status != 409 {
		t.Fatalf("move to its own server: %d %s", r.Status, r.Raw)
	}
	moved := data(f.must(200, "POST", move, map[string]any{"server_id": beta}, f.admin))
	if moved["server_id"] != beta || moved["status"] != "stopped" {
		t.Fatalf("moved %v", moved)
	}
	if objs := engineObjects(t, hostA, c1); len(objs) != 0 {
		t.Fatalf("alpha still holds %v", objs)
	}
	f.must(200, "POST", "/api/v1/containers/"+c1+"/start", nil, f.alice)
	r1 = f.await(c1, "running", 90*time.Second)
	url1 = r1["urls"].(map[string]any)["process"].(string)
	if !strings.Contains(url1, ".beta.localhost") || installationOf(t, hostB, c1) != inst {
		t.Fatalf("after the move: %s on beta %q", url1, installationOf(t, hostB, c1))
	}
	// The agent on beta admits the probe once it has the document.
	f.openAgent(c1, r1)
	run = url1 + "/api/v1/process/run"
	if code, out := through(t, proxyAddr, "POST", run, map[string]any{"shell": "cat /home/user/marker"}, probeHeader, probeKey); code != 200 || !strings.Contains(out, "moved-with-me") {
		t.Fatalf("the marker on beta: %d %s", code, out)
	}
	if code, _ := through(t, proxyAddr, "POST", strings.Replace(run, ".beta.", ".alpha.", 1), map[string]any{"shell": "true"}, probeHeader, probeKey); code != 404 {
		t.Fatalf("the old server's name after the move: %d", code)
	}

	// Deleting leaves nothing on either engine (nor on the local one).
	for _, id := range []string{c1, c2, c3} {
		f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, h := range []string{hostA, hostB, f.host} {
		left, err := runtimetest.Leftovers(ctx, h, inst, "")
		if err != nil || len(left) != 0 {
			t.Fatalf("engine %s holds %v (%v)", h, left, err)
		}
	}
}

// endpoint makes server id the dockerd at host, holding capacity
// containers.
func (f *fixture) endpoint(id, host string, capacity int) {
	f.t.Helper()
	f.must(200, "PUT", "/api/v1/admin/servers/"+id+"/endpoint", map[string]any{"driver": "docker", "docker_host": host, "capacity": capacity}, f.admin)
}
