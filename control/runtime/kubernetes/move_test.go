//go:build kube

package kubernetes_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"deckhand/control/runtime/kubernetes/kubetest"
	"deckhand/control/runtime/runtimetest"
)

// TestServersMove: one control plane, its own engine Docker, with three
// servers: two namespaces of the test cluster and the Docker engine. A
// container placed on the first namespace answers the Kubernetes
// driver's capabilities (pause is 409 by its rule), moves stopped to the
// second namespace (claim to claim), then to the Docker server (claim to
// volume), where it pauses, and back to the first namespace (volume to
// claim), its workspace's files, owners and modes kept each time and
// nothing left on the server it left. Bad moves are refused naming the
// rule.
func TestServersMove(t *testing.T) {
	ref := agentImage(t)
	host := runtimetest.DockerHost(t)
	runtimetest.AgentImageAs(t, host, ref, agentBin, `["/usr/local/bin/deckhand"]`)
	s, proxyPort, must := startControl(t, "--docker-host", host)
	admin := s.Admin()
	_, alice := s.User(admin, "alice@example.com")
	ctx := context.Background()

	// The second "cluster" is a namespace of its own.
	ns2 := "deckhand-move-" + runtimetest.RandomName()
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns2}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var inst string
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if inst != "" {
			for _, ns := range []string{kubetest.Namespace, ns2} {
				if err := purgeIn(ctx, ns, inst); err != nil {
					t.Errorf("purge %s in %s: %v", inst, ns, err)
				}
			}
			if err := runtimetest.Purge(ctx, host, inst); err != nil {
				t.Errorf("purge %s on docker: %v", inst, err)
			}
		}
		_ = cluster.Client.CoreV1().Namespaces().Delete(ctx, ns2, metav1.DeleteOptions{})
	})
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := cluster.Client.CoreV1().ServiceAccounts(ns2).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s never got its default service account", ns2)
		}
		time.Sleep(200 * time.Millisecond)
	}

	server := func(name string, endpoint map[string]any) string {
		id := must(201, "POST", "/api/v1/admin/servers", map[string]any{"name": name, "region": "eu", "price": "0"}, admin)["id"].(string)
		must(200, "PUT", "/api/v1/admin/servers/"+id+"/endpoint", endpoint, admin)
		return id
	}
	kube1 := server("kube1", map[string]any{"driver": "kubernetes", "kubeconfig": inlineKubeconfig(t), "namespace": kubetest.Namespace, "capacity": 5})
	kube2 := server("kube2", map[string]any{"driver": "kubernetes", "kubeconfig": inlineKubeconfig(t), "namespace": ns2, "capacity": 1})
	dock1 := server("dock1", map[string]any{"driver": "docker", "docker_host": host, "capacity": 1})

	project := must(201, "POST", "/api/v1/projects", map[string]any{"name": "p"}, alice)["id"].(string)
	image := must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "agent-" + runtimetest.RandomName(), "image_name": ref,
		"architecture": "amd64", "os": "busybox", "price": json.Number("0")}, admin)["id"].(string)
	c := must(201, "POST", "/api/v1/containers", map[string]any{"project_id": project, "name": "box", "image_id": image}, alice)
	id := c["id"].(string)
	if c["server_id"] != kube1 {
		t.Fatalf("placed on %v, want kube1 (%s), the one with the most room", c["server_id"], kube1)
	}
	await := func(want string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			c := must(200, "GET", "/api/v1/containers/"+id, nil, alice)
			if inst == "" {
				inst = installationOf(t, id)
			}
			if c["status"] == want {
				return c
			}
			if c["status"] == "failed" || time.Now().After(deadline) {
				t.Fatalf("container %s is %v (%v), want %s", id, c["status"], c["status_reason"], want)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	// run runs shell in the container through the platform proxy under
	// the name of the server it is on, retrying while its agent gets the
	// control plane's keys.
	run := func(serverName, shell string) string {
		t.Helper()
		tok := must(201, "POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{"services": []string{"process"}}, alice)
		u := tok["urls"].(map[string]any)["process"].(string)
		if !strings.Contains(u, "."+serverName+".") {
			t.Fatalf("process URL %s does not name server %s", u, serverName)
		}
		h := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
		h, _, _ = strings.Cut(h, "/")
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, out := runThrough(t, "127.0.0.1:"+strconv.Itoa(proxyPort), h, tok["token"].(string), shell)
			if code == 200 && strings.Contains(out, "R[") {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("process run on %s: %d %s", serverName, code, out)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	report := regexp.MustCompile(`R\[[^\]]*\]`)
	// files answers what the workspace holds: the files, the note's
	// owner and mode.
	files := func(serverName string) string {
		t.Helper()
		return report.FindString(run(serverName, `cd /home/user && printf 'R[%s|%s|%s]' "$(cat note)" "$(cat d/f)" "$(stat -c '%u %a' note)"`))
	}

	c = await("running")
	if c["runtime"] != "kubernetes" {
		t.Fatalf("a container on a Kubernetes server answers runtime %v", c["runtime"])
	}
	run("kube1", `cd /home/user && echo kept > note && chmod 604 note && mkdir -p d && echo deep > d/f && printf 'R[]'`)
	before := files("kube1")
	if !strings.HasPrefix(before, "R[kept|deep|") || !strings.HasSuffix(before, " 604]") {
		t.Fatalf("the workspace before the moves: %s", before)
	}

	// The capability is the container's server's: Kubernetes has no
	// freezer, whatever the local engine has.
	if r := s.Call("POST", "/api/v1/containers/"+id+"/pause", nil, alice); r.Status != 409 || !strings.Contains(string(r.Raw), "kubernetes runtime cannot pause") {
		t.Fatalf("pause on a Kubernetes server: %d %s", r.Status, r.Raw)
	}
	move := "/api/v1/admin/containers/" + id + "/move"
	if r := s.Call("POST", move, map[string]any{"server_id": kube2}, admin); r.Status != 409 || !strings.Contains(string(r.Raw), "stop it") {
		t.Fatalf("move of a running container: %d %s", r.Status, r.Raw)
	}
	must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, alice)
	for _, bad := range []struct {
		to     string
		status int
		says   string
	}{{kube1, 409, "on that server already"}, {"srv_nosuch", 404, "server_id"}, {"not a server!", 400, "server_id"}} {
		if r := s.Call("POST", move, map[string]any{"server_id": bad.to}, admin); r.Status != bad.status || !strings.Contains(string(r.Raw), bad.says) {
			t.Fatalf("move to %q: %d %s, want %d naming %q", bad.to, r.Status, r.Raw, bad.status, bad.says)
		}
	}

	// Claim to claim: nothing of the installation stays in the first
	// namespace (no Pod, Service, Secret, claim or copy helper); the
	// second holds the claim alone until the start.
	moved := must(200, "POST", move, map[string]any{"server_id": kube2}, admin)
	if moved["server_id"] != kube2 || moved["status"] != "stopped" {
		t.Fatalf("moved: %v", moved)
	}
	if left, err := leftoversIn(ctx, kubetest.Namespace, inst, ""); err != nil || len(left) != 0 {
		t.Fatalf("kube1 after the move holds %v (%v)", left, err)
	}
	if held, err := leftoversIn(ctx, ns2, inst, ""); err != nil || len(held) != 1 || !strings.HasPrefix(held[0], "volume ") {
		t.Fatalf("kube2 after the move holds %v (%v), want the claim alone", held, err)
	}
	must(200, "POST", "/api/v1/containers/"+id+"/start", nil, alice)
	if c = await("running"); c["runtime"] != "kubernetes" {
		t.Fatalf("on kube2: runtime %v", c["runtime"])
	}
	if got := files("kube2"); got != before {
		t.Fatalf("the workspace on kube2: %s, want %s", got, before)
	}

	// Claim to volume: the Docker server takes it; the second namespace
	// is left empty.
	must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, alice)
	if moved = must(200, "POST", move, map[string]any{"server_id": dock1}, admin); moved["server_id"] != dock1 {
		t.Fatalf("moved: %v", moved)
	}
	if left, err := leftoversIn(ctx, ns2, inst, ""); err != nil || len(left) != 0 {
		t.Fatalf("kube2 after the move holds %v (%v)", left, err)
	}
	must(200, "POST", "/api/v1/containers/"+id+"/start", nil, alice)
	if c = await("running"); c["runtime"] != "docker" {
		t.Fatalf("on dock1: runtime %v", c["runtime"])
	}
	if got := files("dock1"); got != before {
		t.Fatalf("the workspace on dock1: %s, want %s", got, before)
	}
	// The same control plane pauses a container on a Docker server.
	if c = must(200, "POST", "/api/v1/containers/"+id+"/pause", nil, alice); c["status"] != "paused" {
		t.Fatalf("pause on a Docker server: %v", c)
	}
	must(200, "POST", "/api/v1/containers/"+id+"/resume", nil, alice)

	// Volume to claim: back to the first namespace; the Docker engine
	// keeps nothing of it.
	must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, alice)
	if moved = must(200, "POST", move, map[string]any{"server_id": kube1}, admin); moved["server_id"] != kube1 {
		t.Fatalf("moved: %v", moved)
	}
	if left, err := runtimetest.Leftovers(ctx, host, inst, id); err != nil || len(left) != 0 {
		t.Fatalf("dock1 after the move holds %v (%v)", left, err)
	}
	must(200, "POST", "/api/v1/containers/"+id+"/start", nil, alice)
	if c = await("running"); c["runtime"] != "kubernetes" {
		t.Fatalf("back on kube1: runtime %v", c["runtime"])
	}
	if got := files("kube1"); got != before {
		t.Fatalf("the workspace back on kube1: %s, want %s", got, before)
	}

	must(200, "DELETE", "/api/v1/containers/"+id, nil, alice)
	deadline = time.Now().Add(2 * time.Minute)
	for {
		var left []string
		for _, ns := range []string{kubetest.Namespace, ns2} {
			l, err := leftoversIn(ctx, ns, inst, "")
			if err != nil {
				t.Fatal(err)
			}
			left = append(left, l...)
		}
		l, err := runtimetest.Leftovers(ctx, host, inst, id)
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, l...)
		if len(left) == 0 && s.Call("GET", "/api/v1/containers/"+id, nil, alice).Status == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after delete: %v", left)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
