package containerse2e_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"deckhand/control/controltest"
	"deckhand/control/runtime"
	"deckhand/control/runtime/runtimetest"
	"deckhand/platform/tokenseal"
)

// restartable is a fixture whose control plane listens on a fixed
// address: the agents are given its URL, which must hold across a
// restart.
type restartable struct {
	*fixture
	dir   string
	flags []string
}

func newRestartable(t *testing.T) *restartable {
	t.Helper()
	host := runtimetest.DockerHost(t)
	f := &fixture{t: t, host: host}
	f.ref = agentImage(t, host)
	purgeLater(t, host, &f.inst)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := &restartable{fixture: f, dir: t.TempDir(), flags: []string{"--listen", addr, "--docker-host", host, "--enroll-timeout", "40s"}}
	f.s = controltest.StartIn(t, r.dir, r.flags...)
	f.admin = f.s.Admin()
	_, f.alice = f.s.User(f.admin, "alice@example.com")
	f.project = data(f.must(201, "POST", "/api/v1/projects", map[string]any{"name": "p"}, f.alice))["id"].(string)
	f.image = f.publish(f.ref, "0")
	return r
}

// restart kills the control plane (a crash) and starts it again on its
// data.
func (r *restartable) restart() {
	r.t.Helper()
	r.s.Kill()
	r.s = controltest.StartIn(r.t, r.dir, r.flags...)
	r.admin, r.alice = r.s.Admin(), r.s.Login("alice@example.com", controltest.GoodPW)
}

// poolFixture is a restartable fixture with a prespawn image in the
// catalog.
type poolFixture struct {
	*restartable
	prespawn string
}

func newPoolFixture(t *testing.T) *poolFixture {
	t.Helper()
	p := &poolFixture{restartable: newRestartable(t)}
	p.prespawn = data(p.must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "pooled-" + runtimetest.RandomName(), "image_name": p.ref,
		"architecture": "amd64", "os": "busybox", "price": 0, "prespawn": true}, p.admin))["id"].(string)
	return p
}

// projectDoc writes the project's proxy permissions document: the probe
// token runs processes in every container of the project.
func (p *poolFixture) projectDoc() {
	p.t.Helper()
	p.s.Must(p.s.Call("PUT", "/api/v1/projects/"+p.project+"/proxy/permissions", map[string]any{"project": p.project, "container": "*",
		"groups":      map[string]any{"probe": map[string]any{"type": "token", "header": probeHeader, "value": probeKey}},
		"permissions": map[string]any{"probe": map[string]any{"exec": true}}}, p.alice, "If-Match", "file:v0"), 200)
}

// members are the engine containers of image's pool (claimed ones
// included: an engine's labels are fixed), by id, with their state.
func (p *poolFixture) members(image string) map[string]string {
	p.t.Helper()
	cli := runtimetest.Client(p.t, p.host)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", runtime.LabelPool+"="+image)})
	if err != nil {
		p.t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cs.Items {
		out[c.Labels[runtime.LabelContainer]] = string(c.State)
		if p.inst == "" {
			p.inst = c.Labels[runtime.LabelInstallation]
		}
	}
	return out
}

// awaitPool polls the pool until ready containers are ready (and none
// filling), and answers the paused engine containers no record claimed.
func (p *poolFixture) awaitPool(image string, ready int, claimed map[string]bool) map[string]bool {
	p.t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		pool := data(p.must(200, "GET", "/api/v1/admin/images/"+image+"/pool", nil, p.admin))
		free, paused := map[string]bool{}, true
		for id, state := range p.members(image) {
			if !claimed[id] {
				free[id] = true
				paused = paused && state == "paused"
			}
		}
		if pool["ready"] == float64(ready) && pool["filling"] == float64(0) && len(free) == ready && paused {
			return free
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the pool is %v, the engine holds %v unclaimed; want %d ready and paused", pool, free, ready)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tokenIn reads the agent token file of container id from the engine
// (paused or not).
func (p *poolFixture) tokenIn(id string) string {
	p.t.Helper()
	out, err := exec.Command("docker", "-H", p.host, "cp", "deckhand-"+p.inst+"-"+id+":/run/deckhand/agent-token", "-").Output()
	if err != nil {
		p.t.Fatalf("read the token of %s: %v", id, err)
	}
	tr := tar.NewReader(bytes.NewReader(out))
	if _, err := tr.Next(); err != nil {
		p.t.Fatal(err)
	}
	raw, _ := io.ReadAll(tr)
	return strings.TrimSpace(string(raw))
}

// effective is the status of an agent's poll of container id's effective
// document with token.
func (p *poolFixture) effective(id, token string) int {
	return p.s.Call("GET", "/api/v1/containers/"+id+"/proxy/permissions/effective", nil, token).Status
}

// TestWarmPool: an admin sizes a prespawn image's pool; it fills with
// paused, enrolled containers no project sees; ten concurrent creates
// claim each pooled container once (the rest are made cold) and each
// claimed one runs processes with its own new token while the pool's
// token is refused; the pool fills again; after a restart of the control
// plane the records and the engine agree; size 0 drains it and deleting
// the containers leaves nothing labelled. Bad sizes and callers are
// refused.
func TestWarmPool(t *testing.T) {
	p := newPoolFixture(t)
	pool := "/api/v1/admin/images/" + p.prespawn + "/pool"

	// Refusals, nothing written.
	for _, tc := range []struct {
		body any
		want string
	}{{map[string]any{"size": -1}, "size"}, {map[string]any{"size": 21}, "size"}, {map[string]any{}, "size"}} {
		r := p.s.Call("PUT", pool, tc.body, p.admin)
		if r.Status != 400 || !strings.Contains(string(r.Raw), tc.want) {
			t.Fatalf("PUT %v: %d %s", tc.body, r.Status, r.Raw)
		}
	}
	p.must(403, "PUT", pool, map[string]any{"size": 1}, p.alice)
	p.must(403, "GET", pool, nil, p.alice)
	if r := p.s.Call("PUT", "/api/v1/admin/images/"+p.image+"/pool", map[string]any{"size": 1}, p.admin); r.Status != 409 ||
		!strings.Contains(string(r.Raw), "prespawn") {
		t.Fatalf("a pool of an image not marked prespawn: %d %s", r.Status, r.Raw)
	}
	p.must(404, "PUT", "/api/v1/admin/images/img_000000000000000000000000/pool", map[string]any{"size": 1}, p.admin)
	p.must(400, "PUT", "/api/v1/admin/images/nope/pool", map[string]any{"size": 1}, p.admin)
	if got := data(p.must(200, "GET", pool, nil, p.admin)); got["size"] != float64(0) || len(p.members(p.prespawn)) != 0 {
		t.Fatalf("after the refusals: %v, engine %v", got, p.members(p.prespawn))
	}

	// The pool fills: three paused containers, in no project.
	if got := data(p.must(200, "PUT", pool, map[string]any{"size": 3}, p.admin)); got["size"] != float64(3) {
		t.Fatalf("PUT size 3: %v", got)
	}
	first := p.awaitPool(p.prespawn, 3, nil)
	for id := range first {
		p.must(404, "GET", "/api/v1/containers/"+id, nil, p.admin)
		if evs := p.events(id); len(evs) != 0 {
			t.Fatalf("pooled container %s has events %v", id, evs)
		}
	}
	if n := data(p.must(200, "GET", "/api/v1/containers?project_id="+p.project, nil, p.alice))["pagination"].(map[string]any)["total"]; n != float64(0) {
		t.Fatalf("the project lists %v containers before any create", n)
	}
	poolTokens := map[string]string{}
	for id := range first {
		poolTokens[id] = p.tokenIn(id)
	}
	// The project's document admits the probe token, so every container
	// of the project runs its processes.
	p.projectDoc()

	// Ten creates at once against three ready.
	type made struct {
		id, status string
	}
	results := make([]made, 10)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.s.Call("POST", "/api/v1/containers", map[string]any{"project_id": p.project, "name": fmt.Sprintf("c%d", i), "image_id": p.prespawn}, p.alice)
			if r.Status != 201 {
				t.Errorf("create %d: %d %s", i, r.Status, r.Raw)
				return
			}
			c := data(r)
			results[i] = made{c["id"].(string), c["status"].(string)}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ids, claimed := map[string]bool{}, map[string]bool{}
	for _, m := range results {
		if ids[m.id] {
			t.Fatalf("two creates answered container %s", m.id)
		}
		ids[m.id] = true
		if first[m.id] {
			claimed[m.id] = true
			if m.status != "running" {
				t.Fatalf("claimed container %s answered %s", m.id, m.status)
			}
		} else if m.status != "creating" {
			t.Fatalf("a cold create answered %s", m.status)
		}
	}
	if len(claimed) != 3 {
		t.Fatalf("%d of the 3 pooled containers were claimed: %v", len(claimed), results)
	}
	// Each claimed container: its own token, the pool's refused; a
	// process runs; nothing of another container in its home.
	for id := range claimed {
		tok := p.tokenIn(id)
		if tok == poolTokens[id] || !strings.HasPrefix(tok, "agt_") {
			t.Fatalf("claimed %s kept the pool's token", id)
		}
		if got := p.effective(id, poolTokens[id]); got != 401 {
			t.Fatalf("the pool's token of %s after the claim: %d, want 401", id, got)
		}
		if got := p.effective(id, tok); got != 200 {
			t.Fatalf("the new token of %s: %d, want 200", id, got)
		}
		c := p.await(id, "running", time.Second)
		// It took its token over its gateway, once: another hand-over,
		// sealed under the pool's token, is refused and changes nothing.
		if code := handOver(t, c["agent_addr"].(string), poolTokens[id], id); code != 409 || p.tokenIn(id) != tok {
			t.Fatalf("a second hand-over to claimed %s: %d", id, code)
		}
		a := p.openAgent(id, c)
		if out, _, code := a.run("", "ls -A /home/user; touch /home/user/mine"); code != 0 || strings.Contains(out, "mine") {
			t.Fatalf("the home of %s: %d %q", id, code, out)
		}
		if kinds := lifecycleKinds(p.events(id)); kinds != "creating,running" {
			t.Fatalf("events of claimed %s: %s", id, kinds)
		}
	}
	for id := range ids {
		c := p.await(id, "running", 90*time.Second)
		if !claimed[id] {
			// A container made cold has a project: its agent takes no
			// hand-over.
			if code := handOver(t, c["agent_addr"].(string), "agt_any", id); code != 404 {
				t.Fatalf("a hand-over to cold-made %s: %d, want 404", id, code)
			}
		}
	}

	// Refilled with new containers; the claimed ones are not among them.
	second := p.awaitPool(p.prespawn, 3, claimed)
	for id := range second {
		if first[id] || ids[id] {
			t.Fatalf("pooled container %s came back to the pool", id)
		}
	}

	// A restart: the records and the engine still agree.
	p.restart()
	time.Sleep(2 * time.Second) // the pool's reconciler runs at start
	if again := p.awaitPool(p.prespawn, 3, claimed); !sameKeys(again, second) {
		t.Fatalf("after a restart the pool holds %v, before %v", again, second)
	}

	// Size 0 drains it before answering.
	if got := data(p.must(200, "PUT", pool, map[string]any{"size": 0}, p.admin)); got["size"] != float64(0) || got["ready"] != float64(0) {
		t.Fatalf("PUT size 0: %v", got)
	}
	left := p.members(p.prespawn)
	for id := range claimed {
		delete(left, id)
	}
	if len(left) != 0 {
		t.Fatalf("after size 0 the engine holds pool containers %v", left)
	}
	for id := range second {
		if got := engineObjects(t, p.host, id); len(got) != 0 {
			t.Fatalf("a drained member left %v", got)
		}
	}
	for id := range ids {
		p.must(200, "DELETE", "/api/v1/containers/"+id, nil, p.alice)
	}
	if left := p.members(p.prespawn); len(left) != 0 {
		t.Fatalf("after deleting the containers the engine holds %v", left)
	}
	kinds := p.adminEvents("image.pool_resized")
	if kinds != 2 {
		t.Fatalf("image.pool_resized written %d times, want 2", kinds)
	}
}

func sameKeys(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// adminEvents counts the events of kind.
func (p *poolFixture) adminEvents(kind string) int {
	p.t.Helper()
	r := p.must(200, "GET", "/api/v1/events?event_type="+kind+"&limit=100", nil, p.admin)
	list, _ := data(r)["events"].([]any)
	return len(list)
}

// poolRun is one timed create → first process run answered.
func (p *poolFixture) poolRun(name string) (time.Duration, string) {
	return p.timedRun(name, p.prespawn, true)
}

// timedRun is one timed create of image → first process run answered;
// pooled says the create must claim from the pool (else it is made cold).
func (p *poolFixture) timedRun(name, image string, pooled bool) (time.Duration, string) {
	start := time.Now()
	r := p.s.Call("POST", "/api/v1/containers", map[string]any{"project_id": p.project, "name": name, "image_id": image}, p.alice)
	if r.Status != 201 {
		p.t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	c := data(r)
	if pooled != (c["status"] == "running") {
		p.t.Fatalf("claimed from the pool: %v, want %v: %v", c["status"] == "running", pooled, c)
	}
	p.t.Logf("create answered after %v", time.Since(start))
	if !pooled {
		c = p.await(c["id"].(string), "running", 120*time.Second)
	}
	addr := c["agent_addr"].(string)
	body, _ := json.Marshal(map[string]any{"shell": "echo ok"})
	cl := &http.Client{Timeout: 10 * time.Second}
	for {
		req, _ := http.NewRequest("POST", "http://"+addr+"/_/process/api/v1/process/run", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(probeHeader, probeKey)
		resp, err := cl.Do(req)
		if err == nil {
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(out), "ok") {
				return time.Since(start), c["id"].(string)
			}
		}
		if time.Since(start) > 30*time.Second {
			p.t.Fatalf("the claimed container never ran a process: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestPoolClaimLatency measures create from the warm pool → first process
// run answered (p50 over the runs, logged with the load average); it
// asserts no time, and runs only when DECKHAND_POOL_BENCH names the runs
// (scripts/bench/pool.sh).
func TestPoolClaimLatency(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("DECKHAND_POOL_BENCH"))
	if runs < 1 {
		t.Skip("a measurement: DECKHAND_POOL_BENCH=<runs> (scripts/bench/pool.sh)")
	}
	p := newPoolFixture(t)
	// The claim's phases are in the control plane's debug log.
	p.flags = append(p.flags, "--log-level", "debug")
	p.restart()
	pool := "/api/v1/admin/images/" + p.prespawn + "/pool"
	p.projectDoc()
	p.must(200, "PUT", pool, map[string]any{"size": 2}, p.admin)
	var took []time.Duration
	claimed := map[string]bool{}
	for i := range runs {
		p.awaitPool(p.prespawn, 2, claimed)
		time.Sleep(3 * time.Second) // a pool at rest: its agents' timers run out while frozen
		d, id := p.poolRun(fmt.Sprintf("b%d", i))
		took = append(took, d)
		claimed[id] = true
		t.Logf("warm pool claim phases: %s", claimPhases(p.s.Stderr(), id))
		p.must(200, "DELETE", "/api/v1/containers/"+id, nil, p.alice)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("create from the warm pool → first process run answered: p50 %v (runs %v); load average %s", took[len(took)/2], took, loadavg())
	// Beside it, in the same run: creates made cold (an image without a
	// pool).
	var cold []time.Duration
	for i := range 2 {
		d, id := p.timedRun(fmt.Sprintf("cold%d", i), p.image, false)
		cold = append(cold, d)
		p.must(200, "DELETE", "/api/v1/containers/"+id, nil, p.alice)
	}
	t.Logf("warm pool, beside it: a cold create → first process run answered: %v; load average %s", cold, loadavg())
	p.must(200, "PUT", pool, map[string]any{"size": 0}, p.admin)
}

// handOver posts a token hand-over sealed under prev for container id to
// the agent at addr and answers the status.
func handOver(t *testing.T, addr, prev, id string) int {
	t.Helper()
	sealed, err := tokenseal.Seal(tokenseal.Hash(prev), id, "agt_chosen")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(sealed)
	resp, err := http.Post("http://"+addr+tokenseal.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// claimPhases is the control plane's debug line of container id's claim
// (its steps in milliseconds since the create began).
func claimPhases(stderr, id string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "container: claimed") && strings.Contains(line, id) {
			if i := strings.Index(line, "ms="); i >= 0 {
				return line[i:]
			}
			return line
		}
	}
	return "(not logged)"
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}
