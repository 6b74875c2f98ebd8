package docker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"deckhand/control/runtime"
	"deckhand/control/runtime/docker"
	"deckhand/control/runtime/runtimetest"
)

// target answers the suite's target for the engine at host.
func target(t *testing.T, host string) runtimetest.Target {
	return runtimetest.Target{
		New: func(t *testing.T, inst string) runtime.Driver {
			return newDriver(t, host, inst)
		},
		Unreachable: func(t *testing.T) runtime.Driver {
			d, err := docker.New(context.Background(), docker.Options{
				Host: "unix://" + filepath.Join(t.TempDir(), "none.sock"), Installation: "rt-down",
			})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Image: runtimetest.ImportImage(t, host),
		Leftovers: func(ctx context.Context, inst, id string) ([]string, error) {
			return runtimetest.Leftovers(ctx, host, inst, id)
		},
	}
}

func newDriver(t testing.TB, host, inst string) *docker.Driver {
	t.Helper()
	return newDriverOpts(t, docker.Options{Host: host, Installation: inst})
}

// newDriverOpts is newDriver with more options; its installation's engine
// objects are purged at the test's end.
func newDriverOpts(t testing.TB, opts docker.Options) *docker.Driver {
	t.Helper()
	host, inst := opts.Host, opts.Installation
	d, err := docker.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := runtimetest.Purge(ctx, host, inst); err != nil {
			t.Errorf("purge installation %s: %v", inst, err)
		}
	})
	return d
}

func TestDockerEngine(t *testing.T) {
	host := runtimetest.DockerHost(t)
	runtimetest.Run(t, target(t, host))
	t.Run("EngineView", func(t *testing.T) { engineView(t, host) })
	t.Run("NetworkRemoved", func(t *testing.T) { networkRemoved(t, host) })
	t.Run("RefusedCreate", func(t *testing.T) { refusedCreate(t, host) })
}

// refusedCreate: a create the engine refuses (more CPUs than the host has;
// dockerd checks, Podman does not) answers the engine's words and leaves
// no volume behind.
func refusedCreate(t *testing.T, host string) {
	image := runtimetest.ImportImage(t, host)
	inst := "rt-" + runtimetest.RandomName()
	d := newDriver(t, host, inst)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := runtime.Spec{ID: "big-" + runtimetest.RandomName(), Image: image, Args: runtimetest.Args(), Resources: runtime.Resources{CPUs: 4096}}
	err := d.Create(ctx, spec)
	if err == nil || !strings.Contains(err.Error(), "CPU") {
		t.Fatalf("create with 4096 CPUs: %v, want the engine's refusal", err)
	}
	left, lerr := runtimetest.Leftovers(ctx, host, inst, "")
	if lerr != nil || len(left) > 0 {
		t.Fatalf("a refused create left %v (%v)", left, lerr)
	}
}

func TestPodmanSocket(t *testing.T) {
	host := runtimetest.Podman(t)
	tg := target(t, host)
	tg.ArchiveDropsOwners = true
	runtimetest.Run(t, tg)
	t.Run("EngineView", func(t *testing.T) { engineView(t, host) })
	t.Run("NetworkRemoved", func(t *testing.T) { networkRemoved(t, host) })
}

// networkRemoved: the installation's network, removed behind the driver's
// back after it made it, is made again by the next create.
func networkRemoved(t *testing.T, host string) {
	image := runtimetest.ImportImage(t, host)
	inst := "rt-" + runtimetest.RandomName()
	d := newDriver(t, host, inst)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := runtime.Spec{ID: "net-" + runtimetest.RandomName(), Image: image, Args: runtimetest.Args()}
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, spec.ID, false); err != nil {
		t.Fatal(err)
	}
	cli := runtimetest.Client(t, host)
	if _, err := cli.NetworkRemove(ctx, "deckhand-"+inst, client.NetworkRemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Create(ctx, spec); err != nil {
		t.Fatalf("create after the network was removed: %v", err)
	}
	if err := d.Start(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	runtimetest.WaitHTTP(t, runtimetest.WaitState(t, d, spec.ID, runtime.StateRunning).Addr)
}

// engineView checks what the engine itself holds of a container: no
// secret in its configuration, the labels, the limits, no published port.
func engineView(t *testing.T, host string) {
	image := runtimetest.ImportImage(t, host)
	inst := "rt-" + runtimetest.RandomName()
	d := newDriver(t, host, inst)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := "view-" + runtimetest.RandomName()
	secret := "agt_" + runtimetest.RandomName() + "-do-not-leak"
	spec := runtime.Spec{
		ID: id, ProjectID: "prj-1", Image: image, Autostart: true,
		Resources: runtime.Resources{CPUs: 1.5, MemoryMB: 128},
		Files:     []runtime.File{{Path: "/run/deckhand/agent-token", Content: []byte(secret)}},
		Args:      runtimetest.Args(),
	}
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	runtimetest.WaitState(t, d, id, runtime.StateRunning)
	cli := runtimetest.Client(t, host)
	res, err := cli.ContainerInspect(ctx, d.ContainerName(id), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Raw), secret) {
		t.Fatalf("the engine's inspect holds the agent token: %s", res.Raw)
	}
	c := res.Container
	want := map[string]string{runtime.LabelContainer: id, runtime.LabelProject: "prj-1", runtime.LabelInstallation: inst}
	for k, v := range want {
		if c.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Config.Labels[k], v)
		}
	}
	h := c.HostConfig
	if h.NanoCPUs != 1_500_000_000 || h.Memory != 128<<20 {
		t.Errorf("limits: %d nano-CPUs, %d bytes", h.NanoCPUs, h.Memory)
	}
	if h.RestartPolicy.Name != "unless-stopped" {
		t.Errorf("restart policy %q, want unless-stopped for autostart", h.RestartPolicy.Name)
	}
	if len(h.PortBindings) > 0 || h.PublishAllPorts {
		t.Errorf("ports published on the host: %v", h.PortBindings)
	}
	if len(c.NetworkSettings.Ports) > 0 {
		for p, b := range c.NetworkSettings.Ports {
			if len(b) > 0 {
				t.Errorf("port %v bound on the host: %v", p, b)
			}
		}
	}
	vols, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: client.Filters{}.Add("label", runtime.LabelContainer+"="+id)})
	if err != nil || len(vols.Items) != 1 {
		t.Fatalf("the workspace volume by label: %+v, %v", vols.Items, err)
	}
	for k, v := range want {
		if vols.Items[0].Labels[k] != v {
			t.Errorf("volume label %s = %q, want %q", k, vols.Items[0].Labels[k], v)
		}
	}
	raw, _ := json.Marshal(vols.Items[0])
	if strings.Contains(string(raw), secret) {
		t.Errorf("the volume holds the token in its metadata")
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("label", runtime.LabelInstallation+"="+inst)})
	if err != nil || len(nets.Items) != 1 || nets.Items[0].Name != "deckhand-"+inst {
		t.Fatalf("the installation's network by label: %+v, %v", nets.Items, err)
	}
}
