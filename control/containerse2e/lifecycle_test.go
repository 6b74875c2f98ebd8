package containerse2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/control/runtime/runtimetest"
)

type resp = controltest.Resp

var data = controltest.Data

// fixture is a control plane on the real engine with an admin, a user who
// owns a project and a catalog image whose entrypoint is the agent.
type fixture struct {
	t       *testing.T
	s       *controltest.Server
	host    string
	admin   string
	alice   string
	project string
	image   string // catalog id
	ref     string // the engine's reference
	inst    string // the installation, once a container shows it
}

func newFixture(t *testing.T, flags ...string) *fixture {
	t.Helper()
	return newFixtureOn(t, runtimetest.DockerHost(t), flags...)
}

// newFixtureOn is newFixture on the engine at host.
func newFixtureOn(t *testing.T, host string, flags ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, host: host}
	// Cleanups run last first: the installation's containers go before
	// the image they run.
	f.ref = agentImage(t, host)
	purgeLater(t, host, &f.inst)
	f.s = controltest.Start(t, append([]string{"--docker-host", host, "--enroll-timeout", "40s"}, flags...)...)
	f.admin = f.s.Admin()
	_, f.alice = f.s.User(f.admin, "alice@example.com")
	f.project = data(f.must(201, "POST", "/api/v1/projects", map[string]any{"name": "p"}, f.alice))["id"].(string)
	f.image = f.publish(f.ref, "0")
	return f
}

// publish adds an image to the catalog with the given price.
func (f *fixture) publish(ref, price string) string {
	f.t.Helper()
	r := f.must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "agent-" + runtimetest.RandomName(), "image_name": ref,
		"architecture": "amd64", "os": "busybox", "price": json.Number(price)}, f.admin)
	return data(r)["id"].(string)
}

func (f *fixture) must(status int, method, path string, body any, bearer string) resp {
	f.t.Helper()
	r := f.s.Call(method, path, body, bearer)
	if r.Status != status {
		f.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Raw)
	}
	return r
}

// create makes a container and answers its id.
func (f *fixture) create(name string, extra map[string]any) string {
	f.t.Helper()
	body := map[string]any{"project_id": f.project, "name": name, "image_id": f.image}
	for k, v := range extra {
		body[k] = v
	}
	c := data(f.must(201, "POST", "/api/v1/containers", body, f.alice))
	if c["status"] != "creating" || c["runtime"] != "docker" {
		f.t.Fatalf("create answered %v", c)
	}
	id := c["id"].(string)
	f.t.Cleanup(func() {
		if f.inst == "" {
			f.inst = installationOf(f.t, f.host, id)
		}
	})
	return id
}

// await polls container id until its status is want (or fails the test
// when it settles elsewhere or time runs out).
func (f *fixture) await(id, want string, within time.Duration) map[string]any {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for {
		c := data(f.must(200, "GET", "/api/v1/containers/"+id, nil, f.alice))
		if f.inst == "" {
			f.inst = installationOf(f.t, f.host, id)
		}
		if c["status"] == want {
			return c
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("container %s is %v (%v), want %s after %s", id, c["status"], c["status_reason"], want, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// events are the kinds of container id's events, oldest first.
func (f *fixture) events(id string) []string {
	f.t.Helper()
	r := f.must(200, "GET", "/api/v1/events?container_id="+id+"&sort_order=asc&limit=500", nil, f.admin)
	var out []string
	list, _ := data(r)["events"].([]any)
	for _, e := range list {
		out = append(out, e.(map[string]any)["event_type"].(string))
	}
	return out
}

// lifecycleKinds keeps the container.<status> kinds of kinds.
func lifecycleKinds(kinds []string) string {
	var out []string
	for _, k := range kinds {
		switch k {
		case "container.creating", "container.running", "container.stopped", "container.failed", "container.deleting":
			out = append(out, strings.TrimPrefix(k, "container."))
		}
	}
	return strings.Join(out, ",")
}

// agent calls container c's gateway at its agent_addr with the token
// group the fixture's document admits.
type agent struct {
	t    *testing.T
	addr string
}

const probeHeader, probeKey = "X-Probe", "probe-key-1"

// cliKey is the token the CLI's group in the document takes.
const cliKey = "cli-key-1"

// openAgent writes a proxy permissions document letting the probe token
// run processes, and waits until the agent enforces it.
func (f *fixture) openAgent(id string, c map[string]any) *agent {
	f.t.Helper()
	doc := "/api/v1/containers/" + id + "/proxy/permissions"
	if f.s.Call("GET", doc, nil, f.alice).Status == 404 {
		f.s.Must(f.s.Call("PUT", doc, map[string]any{"project": f.project, "container": id,
			"groups": map[string]any{"probe": map[string]any{"type": "token", "header": probeHeader, "value": probeKey},
				"cli": map[string]any{"type": "token", "header": "Authorization", "value": "Bearer " + cliKey}},
			"permissions": map[string]any{"probe": map[string]any{"exec": true}, "cli": map[string]any{"exec": true, "files": true}}},
			f.alice, "If-Match", "file:v0"), 200)
	}
	a := &agent{t: f.t, addr: c["agent_addr"].(string)}
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, _ := a.try("POST", "/_/process/api/v1/process/run", map[string]any{"shell": "true"})
		if status == 200 {
			return a
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the agent at %s never admitted the probe token (last status %d)", a.addr, status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (a *agent) try(method, path string, body any) (int, []byte) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+a.addr+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(probeHeader, probeKey)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// run runs a shell command line in the container (as user, when given)
// and answers its stdout, stderr and exit code.
func (a *agent) run(user, shell string) (stdout, stderr string, code int) {
	a.t.Helper()
	body := map[string]any{"shell": shell}
	if user != "" {
		body["user"] = user
	}
	status, raw := a.try("POST", "/_/process/api/v1/process/run", body)
	if status != 200 {
		a.t.Fatalf("process run %q: %d %s", shell, status, raw)
	}
	var r struct {
		Stdout, Stderr string
		ExitCode       *int `json:"exit_code"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.ExitCode == nil {
		a.t.Fatalf("process run %q: %s", shell, raw)
	}
	return r.Stdout, r.Stderr, *r.ExitCode
}

// TestContainerLifecycle: create → running (agent enrolled, healthy) →
// a process run through the agent → files survive stop and start → the
// token file is root's alone and not in the engine's description →
// restart → delete leaves nothing in the engine, with every event.
func TestContainerLifecycle(t *testing.T) {
	f := newFixture(t)
	start := time.Now()
	id := f.create("box", map[string]any{"resources": map[string]any{"cpus": 0.5, "memory_mb": 256}, "env": map[string]any{"GREETING": "hi"}})
	c := f.await(id, "running", 60*time.Second)
	t.Logf("create → running (agent enrolled and healthy): %s", time.Since(start).Round(time.Millisecond))
	if c["enrolled_at"] == nil || c["agent_addr"] == "" || c["status_reason"] != nil {
		t.Fatalf("running container: %v", c)
	}
	urls := c["urls"].(map[string]any)
	if want := fmt.Sprintf("https://%s-%s-terminal-1.local.localhost", f.project, id); urls["terminal"] != want {
		t.Fatalf("urls.terminal %v, want %s", urls["terminal"], want)
	}
	a := f.openAgent(id, c)
	out, _, code := a.run("", "echo kept > /home/user/note; echo $GREETING; id -u")
	if code != 0 || out != "hi\n0\n" {
		t.Fatalf("process in the container: %d %q", code, out)
	}

	// The token file: root reads it, the image's user does not, and the
	// engine's description of the container does not hold it.
	token, _, code := a.run("", "cat /run/deckhand/agent-token")
	token = strings.TrimSpace(token)
	if code != 0 || !strings.HasPrefix(token, "agt_") {
		t.Fatalf("root reading the token file: %d %q", code, token)
	}
	if _, errOut, code := a.run("user", "cat /run/deckhand/agent-token"); code == 0 || !strings.Contains(errOut, "Permission denied") {
		t.Fatalf("user read the token file: %d %q", code, errOut)
	}
	inspect, err := exec.Command("docker", "-H", f.host, "inspect", "deckhand-"+f.inst+"-"+id).CombinedOutput()
	if err != nil {
		t.Fatalf("docker inspect: %v %s", err, inspect)
	}
	if strings.Contains(string(inspect), token) || !strings.Contains(string(inspect), "--token-file") {
		t.Fatal("docker inspect shows the agent token, or not the token file flag")
	}

	// Stop and start keep the workspace.
	if c := data(f.must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, f.alice)); c["status"] != "stopped" {
		t.Fatalf("stop: %v", c)
	}
	f.must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, f.alice) // idempotent
	c = data(f.must(200, "POST", "/api/v1/containers/"+id+"/start", nil, f.alice))
	if c["status"] != "running" {
		t.Fatalf("start: %v", c)
	}
	a = f.openAgent(id, c)
	if out, _, _ := a.run("", "cat /home/user/note"); out != "kept\n" {
		t.Fatalf("the workspace after stop and start: %q", out)
	}
	if c := data(f.must(200, "POST", "/api/v1/containers/"+id+"/restart", nil, f.alice)); c["status"] != "running" {
		t.Fatalf("restart: %v", c)
	}

	if got := engineObjects(t, f.host, id); len(got) != 2 {
		t.Fatalf("the engine holds %v for the container, want its container and its volume", got)
	}
	f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
	f.must(404, "GET", "/api/v1/containers/"+id, nil, f.alice)
	f.must(404, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
	if got := engineObjects(t, f.host, id); len(got) != 0 {
		t.Fatalf("after delete the engine still holds %v", got)
	}
	if got, want := lifecycleKinds(f.events(id)), "creating,running,stopped,running,deleting"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
}
