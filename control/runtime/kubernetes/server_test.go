//go:build kube

package kubernetes_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/control/runtime/kubernetes/kubetest"
	"deckhand/control/runtime/runtimetest"
)

// inlineKubeconfig is the test cluster's admin kubeconfig with its
// certificates inline: a server endpoint takes no file references.
func inlineKubeconfig(t *testing.T) string {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	c := cluster.Config
	return "apiVersion: v1\nkind: Config\n" +
		"clusters:\n- name: kubetest\n  cluster:\n    server: " + c.Host + "\n    certificate-authority-data: " + read(c.CAFile) + "\n" +
		"users:\n- name: admin\n  user:\n    client-certificate-data: " + read(c.CertFile) + "\n    client-key-data: " + read(c.KeyFile) + "\n" +
		"contexts:\n- name: kubetest\n  context:\n    cluster: kubetest\n    user: admin\n" +
		"current-context: kubetest\n"
}

// TestKubernetesServer: a control plane whose own runtime is the Docker
// engine runs a container on a server whose endpoint is the test
// cluster: the container is placed there, runs as a Pod whose agent
// enrols, answers a command through the platform proxy under the
// server's name (and not under the local engine's), and a delete leaves
// nothing in the cluster.
func TestKubernetesServer(t *testing.T) {
	ref := agentImage(t)
	s, proxyPort, must := startControl(t, "--docker-host", runtimetest.DockerHost(t))
	admin := s.Admin()
	_, alice := s.User(admin, "alice@example.com")
	srv := must(201, "POST", "/api/v1/admin/servers", map[string]any{"name": "kube1", "region": "eu", "price": "0"}, admin)["id"].(string)
	must(200, "PUT", "/api/v1/admin/servers/"+srv+"/endpoint", map[string]any{"driver": "kubernetes",
		"kubeconfig": inlineKubeconfig(t), "namespace": kubetest.Namespace, "capacity": 5}, admin)
	project := must(201, "POST", "/api/v1/projects", map[string]any{"name": "p"}, alice)["id"].(string)
	image := must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "agent-" + runtimetest.RandomName(), "image_name": ref,
		"architecture": "amd64", "os": "busybox", "price": json.Number("0")}, admin)["id"].(string)

	var inst string
	t.Cleanup(func() {
		if inst != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := purge(ctx, inst); err != nil {
				t.Errorf("purge %s: %v", inst, err)
			}
		}
	})
	c := must(201, "POST", "/api/v1/containers", map[string]any{"project_id": project, "name": "box", "image_id": image}, alice)
	id := c["id"].(string)
	if c["server_id"] != srv {
		t.Fatalf("placed on %v, want the cluster's server %s", c["server_id"], srv)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		c = must(200, "GET", "/api/v1/containers/"+id, nil, alice)
		if inst == "" {
			inst = installationOf(t, id)
		}
		if c["status"] == "running" {
			break
		}
		if c["status"] == "failed" || time.Now().After(deadline) {
			t.Fatalf("container %s is %v (%v), want running", id, c["status"], c["status_reason"])
		}
		time.Sleep(250 * time.Millisecond)
	}
	if inst == "" || !strings.Contains(objects(t, inst, id), "pod ") {
		t.Fatalf("the cluster holds no Pod of %s (installation %q)", id, inst)
	}
	tok := must(201, "POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{"services": []string{"process"}}, alice)
	u := tok["urls"].(map[string]any)["process"].(string)
	if !strings.Contains(u, "-process-1.kube1.localhost:") {
		t.Fatalf("process URL %s does not name the server", u)
	}
	hostOf := func(u string) string {
		h := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
		h, _, _ = strings.Cut(h, "/")
		return h
	}
	proxy := "127.0.0.1:" + strconv.Itoa(proxyPort)
	bearer := tok["token"].(string)
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, out := runThrough(t, proxy, hostOf(u), bearer, "echo on-the-cluster")
		if code == 200 && strings.Contains(out, "on-the-cluster") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process run through the proxy on server kube1: %d %s", code, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Under the local engine's name the same container is not found.
	if code, out := runThrough(t, proxy, strings.Replace(hostOf(u), ".kube1.", ".local.", 1), bearer, "true"); code != 404 {
		t.Fatalf("the container under the local engine's name: %d %s", code, out)
	}

	must(200, "DELETE", "/api/v1/containers/"+id, nil, alice)
	deadline = time.Now().Add(2 * time.Minute)
	for left := objects(t, inst, id); left != ""; left = objects(t, inst, id) {
		if time.Now().After(deadline) {
			t.Fatalf("after delete the cluster still holds %s", left)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
