//go:build kube

package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"deckhand/control/controltest"
	"deckhand/control/runtime"
	"deckhand/control/runtime/kubernetes/kubetest"
	"deckhand/control/runtime/runtimetest"
	"deckhand/platform/platformtest"
)

// agentImage imports an image whose entrypoint is the deckhand agent into
// the node and removes it after the test.
func agentImage(t *testing.T) string {
	t.Helper()
	rootfs, err := runtimetest.AgentImageTar(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	ref := "deckhand-kubee2e/agent:" + runtimetest.RandomName()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cluster.ImportImage(ctx, ref, rootfs, []string{"/usr/local/bin/deckhand"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.RemoveImage(context.Background(), ref) })
	return nodeHas(t, ref)
}

// TestControlPlaneOnKubernetes runs `deckhand-control serve --runtime
// kubernetes` against the test cluster: a user creates a container from
// the catalog, its agent enrolls from its Pod, a command runs in it
// through the platform proxy, its workspace outlives a stop and a start
// (a new Pod on the same claim), and a delete leaves nothing in the API.
func TestControlPlaneOnKubernetes(t *testing.T) {
	ref := agentImage(t)
	s, proxyPort, must := startControl(t, "--runtime", "kubernetes", "--kubeconfig", cluster.Kubeconfig, "--kube-namespace", kubetest.Namespace)
	admin := s.Admin()
	_, alice := s.User(admin, "alice@example.com")
	project := must(201, "POST", "/api/v1/projects", map[string]any{"name": "p"}, alice)["id"].(string)
	image := must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "agent-" + runtimetest.RandomName(), "image_name": ref,
		"architecture": "amd64", "os": "busybox", "price": json.Number("0")}, admin)["id"].(string)

	var inst string
	t.Cleanup(func() {
		if inst == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := purge(ctx, inst); err != nil {
			t.Errorf("purge %s: %v", inst, err)
		}
	})
	c := must(201, "POST", "/api/v1/containers", map[string]any{"project_id": project, "name": "box", "image_id": image}, alice)
	if c["runtime"] != "kubernetes" || c["status"] != "creating" {
		t.Fatalf("create answered %v", c)
	}
	id := c["id"].(string)
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
	c = await("running")

	// A command runs in the Pod through the platform proxy, opened by an
	// access token alice asks for.
	tok := must(201, "POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{"services": []string{"process"}}, alice)
	run := func(shell string) (int, string) {
		t.Helper()
		u := tok["urls"].(map[string]any)["process"].(string)
		host := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
		host, _, _ = strings.Cut(host, "/")
		return runThrough(t, "127.0.0.1:"+strconv.Itoa(proxyPort), host, tok["token"].(string), shell)
	}
	// The access token is in force once the agent has the control plane's
	// keys; retry briefly.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out := run("echo kept > /home/user/note; echo in-the-pod; cat /proc/1/cmdline | tr '\\0' ' '")
		if code == 200 && strings.Contains(out, "in-the-pod") && strings.Contains(out, "deckhand") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process run through the proxy into the Pod: %d %s", code, out)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Stop deletes the Pod and keeps the claim; start makes a new Pod on
	// it, whose agent enrolls again.
	if c := must(200, "POST", "/api/v1/containers/"+id+"/stop", nil, alice); c["status"] != "stopped" {
		t.Fatalf("stop: %v", c)
	}
	if pods := objects(t, inst, id); strings.Contains(pods, "pod ") || !strings.Contains(pods, "volume ") {
		t.Fatalf("after stop the API holds %s, want the claim and no Pod", pods)
	}
	must(200, "POST", "/api/v1/containers/"+id+"/start", nil, alice)
	await("running")
	deadline = time.Now().Add(60 * time.Second)
	for {
		code, out := run("cat /home/user/note")
		if code == 200 && strings.Contains(out, "kept") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workspace after stop and start: %d %s", code, out)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Delete: the record and every object of the container are gone.
	must(200, "DELETE", "/api/v1/containers/"+id, nil, alice)
	deadline = time.Now().Add(2 * time.Minute)
	for {
		left := objects(t, inst, id)
		if s.Call("GET", "/api/v1/containers/"+id, nil, alice).Status == 404 && left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after delete the API still holds %q", left)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// installationOf is the installation label on container id's anchor.
func installationOf(t *testing.T, id string) string {
	t.Helper()
	list, err := cluster.Client.CoreV1().Secrets(kubetest.Namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: runtime.LabelContainer + "=" + id})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if v := s.Labels[runtime.LabelInstallation]; v != "" {
			return v
		}
	}
	return ""
}

// objects names what the API holds for container id of installation inst.
func objects(t *testing.T, inst, id string) string {
	t.Helper()
	if inst == "" {
		return ""
	}
	left, err := leftovers(context.Background(), inst, id)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(left, ", ")
}

// runThrough runs shell with the process service of the container whose
// per-service Host is host, through the platform proxy at proxy, with
// bearer, and answers the status and body.
func runThrough(t *testing.T, proxy, host, bearer, shell string) (int, string) {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"shell": shell})
	req, _ := http.NewRequest("POST", "http://"+proxy+"/api/v1/process/run", bytes.NewReader(raw))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("process run through the proxy: %v", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// startControl starts deckhand-control with flags for containers on the
// test cluster (its workspace class, no pulls) and answers it, its proxy's
// port and a call that fails the test on another status. The Pods reach
// the control plane on the bridge's host address; that address exists
// once the first Pod is on the network, so the API listens on every
// address of the host at a port chosen now.
func startControl(t *testing.T, flags ...string) (*controltest.Server, int, func(status int, method, path string, body any, bearer string) map[string]any) {
	t.Helper()
	ports := platformtest.FreePortBase(t, 2)
	apiPort, proxyPort := ports, ports+1
	host := strings.TrimSuffix(cluster.PodCIDR, "0/24") + "1"
	s := controltest.Start(t, append([]string{"--listen", "0.0.0.0:" + strconv.Itoa(apiPort),
		"--kube-storage-class", kubetest.StorageClass, "--kube-pull-policy", "Never",
		"--agent-control-url", "http://" + host + ":" + strconv.Itoa(apiPort),
		"--proxy-listen", "127.0.0.1:" + strconv.Itoa(proxyPort), "--container-domain", "localhost",
		"--enroll-timeout", "120s"}, flags...)...)
	must := func(status int, method, path string, body any, bearer string) map[string]any {
		t.Helper()
		r := s.Call(method, path, body, bearer)
		if r.Status != status {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, status, r.Raw)
		}
		return controltest.Data(r)
	}
	return s, proxyPort, must
}
