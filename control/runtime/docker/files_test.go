package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"deckhand/control/runtime"
	"deckhand/control/runtime/docker"
	"deckhand/control/runtime/runtimetest"
)

// TestDockerEngineBoundFiles runs the driver suite with the containers'
// files bound from a host directory instead of copied through the
// engine's archive API: the secret file root-only in the container, a
// second create's token reaching a running agent, nothing left behind;
// and what the engine itself shows of a bound secret.
func TestDockerEngineBoundFiles(t *testing.T) {
	host := runtimetest.DockerHost(t)
	tg := target(t, host)
	files := t.TempDir()
	tg.New = func(t *testing.T, inst string) runtime.Driver {
		return newDriverOpts(t, docker.Options{Host: host, Installation: inst, FilesDir: files})
	}
	runtimetest.Run(t, tg)
	t.Run("EngineView", func(t *testing.T) { boundView(t, host, files) })
	// Every container's files went with its delete.
	if left, _ := os.ReadDir(files); len(left) > 0 {
		t.Errorf("files left on the host after the suite: %v", left)
	}
}

// boundView: the engine's inspect shows the host path of a bound secret,
// never its content; the host file is root's, 0400, in a root-only
// directory; a rewrite (a warm-pool claim's) reaches the running agent
// through the same bind; the delete removes the host files.
func boundView(t *testing.T, host, files string) {
	image := runtimetest.ImportImage(t, host)
	inst := "rt-" + runtimetest.RandomName()
	d := newDriverOpts(t, docker.Options{Host: host, Installation: inst, FilesDir: files})
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := "bound-" + runtimetest.RandomName()
	secret := "agt_" + runtimetest.RandomName() + "-do-not-leak"
	spec := runtime.Spec{ID: id, Image: image, Args: runtimetest.Args(),
		Files: []runtime.File{{Path: runtimetest.TokenPath, Content: []byte(secret), Mode: 0o400}}}
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// A failure below must not leave the container or its host files.
	deleted := false
	defer func() {
		if !deleted {
			_ = d.Delete(context.Background(), id, false)
		}
	}()
	if err := d.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	addr := runtimetest.WaitState(t, d, id, runtime.StateRunning).Addr
	runtimetest.WaitHTTP(t, addr)
	res, err := runtimetest.Client(t, host).ContainerInspect(ctx, d.ContainerName(id), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Raw), secret) {
		t.Fatalf("the engine's inspect holds the agent token: %s", res.Raw)
	}
	dir := filepath.Join(files, d.ContainerName(id))
	bound := false
	for _, m := range res.Container.Mounts {
		if m.Destination == runtimetest.TokenPath && filepath.Dir(m.Source) == dir && !m.RW {
			bound = true
		}
	}
	if !bound {
		t.Fatalf("the token is not bound read-only from %s: %+v", dir, res.Container.Mounts)
	}
	for _, p := range []string{dir, filepath.Join(dir, "0-run_deckhand_agent-token")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{true: 0o700, false: 0o400}[fi.IsDir()]; fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	// A rewrite reaches the running container through its bind.
	if err := d.WriteFiles(ctx, id, []runtime.File{{Path: runtimetest.TokenPath, Content: []byte("agt_claimed"), Mode: 0o400}}); err != nil {
		t.Fatal(err)
	}
	if got := runtimetest.Shell(t, addr, "cat "+runtimetest.TokenPath); got != "agt_claimed" {
		t.Errorf("the token after a rewrite: %q", got)
	}
	if err := d.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	deleted = true
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the container's files stay on the host after its delete: %v", err)
	}
}

// TestBindRefusedWords: the words the driver takes for "the engine does
// not see this host's files" (it then copies through the archive API) are
// the engine's own for a bind of a missing path.
func TestBindRefusedWords(t *testing.T) {
	host := runtimetest.DockerHost(t)
	image := runtimetest.ImportImage(t, host)
	inst := "rt-" + runtimetest.RandomName()
	missing := filepath.Join(t.TempDir(), "gone")
	d := newDriverOpts(t, docker.Options{Host: host, Installation: inst, FilesDir: missing})
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The driver makes its directory on this host; a directory the engine
	// cannot see is one removed between the write and the create, which
	// a hook cannot reach: ask the engine for a bind of a missing file
	// the way the driver does, and check the driver's fallback path.
	id := "fallback-" + runtimetest.RandomName()
	spec := runtime.Spec{ID: id, Image: image, Args: runtimetest.Args(),
		Files: []runtime.File{{Path: runtimetest.TokenPath, Content: []byte("agt_fallback"), Mode: 0o400}}}
	docker.SetBeforeCreate(func() { _ = os.RemoveAll(missing) })
	defer docker.SetBeforeCreate(nil)
	if err := d.Create(ctx, spec); err != nil {
		t.Fatalf("a create whose bind the engine refuses: %v (want the archive's copy)", err)
	}
	docker.SetBeforeCreate(nil)
	// A failure below must not leave the container.
	deleted := false
	defer func() {
		if !deleted {
			_ = d.Delete(context.Background(), id, false)
		}
	}()
	if err := d.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	addr := runtimetest.WaitState(t, d, id, runtime.StateRunning).Addr
	if got := runtimetest.Shell(t, addr, "stat -c '%a %u' "+runtimetest.TokenPath+"; cat "+runtimetest.TokenPath); got != "400 0\nagt_fallback" {
		t.Errorf("the copied token: %q", got)
	}
	if err := d.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	deleted = true
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("files left at %s: %v", missing, err)
	}
}
