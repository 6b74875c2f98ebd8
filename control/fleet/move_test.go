package fleet_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"deckhand/control/fleet"
	"deckhand/control/runtime"
	"deckhand/control/runtime/docker"
	"deckhand/control/servers"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// kubeconfig names a cluster nothing answers at: a driver is made for
// it without reaching it.
const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: unused
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`

// kubeServer offers a free server named name whose endpoint is a
// Kubernetes cluster.
func (e *env) kubeServer(t *testing.T, name string, capacity int) string {
	t.Helper()
	s, err := e.svc.Create(admin, servers.CreateInput{Name: name, Region: "eu", Price: json.Number("0")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SetEndpoint(admin, servers.EndpointInput{ServerRef: servers.ServerRef{ID: s.ID},
		Body: servers.EndpointBody{Driver: "kubernetes", Kubeconfig: kubeconfig, Namespace: name, Capacity: capacity}}); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// withLocal makes the env's fleet one whose local engine is a Docker
// driver (an engine it never reaches here).
func (e *env) withLocal(t *testing.T) {
	t.Helper()
	local, err := docker.New(context.Background(), docker.Options{Host: "unix:///nonexistent/docker.sock", Installation: "itest"})
	if err != nil {
		t.Fatal(err)
	}
	e.fleet = fleet.New(fleet.Options{DB: e.db, Sealer: e.sealer, Local: local, Installation: "itest"})
	t.Cleanup(func() { _ = e.fleet.Close() })
}

// TestCapabilitiesOfTheContainersServer: the fleet answers each server's
// own engine's capabilities, not the local engine's: a Kubernetes server
// pauses nothing and takes no snapshots while the local Docker engine and
// a Docker server do both.
func TestCapabilitiesOfTheContainersServer(t *testing.T) {
	e := newEnv(t)
	e.withLocal(t)
	dock, kube := e.server(t, "dock", 2), e.kubeServer(t, "kube", 2)
	ctx := context.Background()
	for _, c := range []struct {
		server string
		want   runtime.Capabilities
	}{
		{"", runtime.Capabilities{Name: "docker", Pause: true, Snapshots: true}},
		{dock, runtime.Capabilities{Name: "docker", Pause: true, Snapshots: true}},
		{kube, runtime.Capabilities{Name: "kubernetes"}},
	} {
		got, err := e.fleet.CapabilitiesOf(ctx, c.server)
		if err != nil || got != c.want {
			t.Errorf("server %q: %+v %v, want %+v", c.server, got, err, c.want)
		}
	}
	if got := e.fleet.Capabilities(); got.Name != "docker" || !got.Pause {
		t.Errorf("the fleet's own (the local engine's): %+v", got)
	}
	if _, err := e.fleet.CapabilitiesOf(ctx, "srv_gone"); err == nil {
		t.Error("a server without an endpoint answered capabilities")
	}
}

// TestCheckMoveRules: a workspace moves between servers of either driver
// in any pair; each refusal is 409 or 404 on server_id and names its rule.
func TestCheckMoveRules(t *testing.T) {
	e := newEnv(t)
	e.withLocal(t)
	d1, d2, k1, k2 := e.server(t, "d1", 2), e.server(t, "d2", 1), e.kubeServer(t, "k1", 2), e.kubeServer(t, "k2", 2)
	check := func(from, to string, usage map[string]int) error {
		return e.db.View(func(tx *store.Tx) error { return e.fleet.CheckMove(tx, from, to, usage) })
	}
	for _, ok := range [][2]string{{d1, d2}, {d1, k1}, {k1, k2}, {k1, d1}, {"", k1}, {"", d1}} {
		if err := check(ok[0], ok[1], nil); err != nil {
			t.Errorf("move %q → %q: %v", ok[0], ok[1], err)
		}
	}
	if _, err := e.svc.Drain(admin, servers.DrainInput{ServerRef: servers.ServerRef{ID: k2}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to string
		usage    map[string]int
		code     string
		says     string
	}{
		{k1, k1, nil, fault.CodeConflict, "on that server already"},
		{d1, k2, nil, fault.CodeConflict, "draining"},
		{k1, d2, map[string]int{d2: 1}, fault.CodeConflict, "full"},
		{"srv_gone", k1, nil, fault.CodeConflict, "no endpoint any more"},
		{k1, "srv_gone", nil, fault.CodeNotFound, "no server"},
	} {
		err := check(c.from, c.to, c.usage)
		fe := fault.AsError(err)
		if err == nil || fe.Code != c.code || fe.Field != "server_id" || !strings.Contains(fe.Message, c.says) {
			t.Errorf("move %q → %q: %v, want %s on server_id saying %q", c.from, c.to, err, c.code, c.says)
		}
	}
	// Without a local engine (--runtime none) nothing moves off it.
	e.fleet = fleet.New(fleet.Options{DB: e.db, Sealer: e.sealer, Installation: "itest"})
	t.Cleanup(func() { _ = e.fleet.Close() })
	if err := check("", k1, nil); fault.AsError(err).Code != fault.CodeConflict || !strings.Contains(err.Error(), "--runtime none") {
		t.Errorf("move off a missing local engine: %v", err)
	}
}
