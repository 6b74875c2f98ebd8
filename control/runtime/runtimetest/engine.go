package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"deckhand/control/runtime"
	"deckhand/platform/proc"
)

// DockerSocket is where setup's dockerd answers.
const DockerSocket = "unix:///var/run/docker.sock"

// Client answers an engine client for host, closed when the test ends.
func Client(t testing.TB, host string) *client.Client {
	t.Helper()
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatalf("engine client for %s: %v", host, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// DockerHost answers the Docker engine the tests use ($DOCKER_HOST, else
// setup's dockerd), skipping the test when none answers.
func DockerHost(t testing.TB) string {
	t.Helper()
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = DockerSocket
	}
	cli := Client(t, host)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Skipf("no Docker engine answers at %s (scripts/setup.sh starts dockerd): %v", host, err)
	}
	return host
}

// Podman starts a Podman service of the test's own (its own storage, run
// and temporary directories, and socket) and answers its Docker-compatible
// host. The service, its containers and its storage go when the test ends.
// Debian's Podman 4.3 needs the file limits set for every container, which
// the service's containers.conf does.
func Podman(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed: the Podman half of the runtime tests is skipped (apt-get install podman)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the Podman service of the tests runs as root")
	}
	if err := os.MkdirAll("/run/podman", 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "deckhand-podman-")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, run, tmp := filepath.Join(dir, "root"), filepath.Join(dir, "run"), filepath.Join(dir, "tmp")
	for _, d := range []string{root, run, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "podman.sock")
	host := "unix://" + sock
	cmd := exec.Command(bin, "--root", root, "--runroot", run, "--tmpdir", tmp,
		"system", "service", "--time=0", host)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	// Containers first, then the service: their conmon processes outlive
	// it.
	return serveEngine(t, "podman system service", cmd, host, dir, "service.log", 15*time.Second, 30*time.Second,
		filepath.Join(root, "overlay"))
}

// serveEngine starts cmd, an engine that serves host and keeps its state
// in dir, in its own process group (the helpers it starts end with it),
// its output in dir/logName, and waits (up to wait) until it answers.
// When the test ends every container in it is removed, it gets SIGTERM
// and grace before its group is killed, mounts are detached and dir goes.
func serveEngine(t testing.TB, what string, cmd *exec.Cmd, host, dir, logName string, grace, wait time.Duration, mounts ...string) string {
	t.Helper()
	logPath := filepath.Join(dir, logName)
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", what, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		if err := purgeAll(host); err != nil {
			t.Errorf("%s cleanup: %v", what, err)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = logf.Close()
		for _, m := range mounts {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove the directory of %s: %v", what, err)
		}
	})
	cli := Client(t, host)
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Ping(ctx, client.PingOptions{})
		cancel()
		if err == nil {
			return host
		}
		select {
		case <-done:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s ended: %s", what, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s never answered at %s: %v\n%s", what, host, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// purgeAll removes every container of a test's own Podman service: its
// storage holds nothing else. Networks are Podman's host-wide
// configuration, so only Purge removes them, by installation.
func purgeAll(host string) error {
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	errs := []error{err}
	for _, c := range cs.Items {
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Purge removes every container, volume and network labelled with the
// installation on the engine at host.
func Purge(ctx context.Context, host, installation string) error {
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		return err
	}
	defer cli.Close()
	f := client.Filters{}.Add("label", runtime.LabelInstallation+"="+installation)
	var errs []error
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	errs = append(errs, err)
	for _, c := range cs.Items {
		if c.Labels[runtime.LabelInstallation] != installation {
			continue
		}
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		errs = append(errs, err)
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	errs = append(errs, err)
	for _, v := range vs.Items {
		if v.Labels[runtime.LabelInstallation] != installation {
			continue
		}
		_, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
		errs = append(errs, err)
	}
	// Snapshot images, after the containers that may run them.
	is, err := cli.ImageList(ctx, client.ImageListOptions{Filters: f})
	errs = append(errs, err)
	// Newest first: a snapshot of a fork is a child of the fork's.
	sort.Slice(is.Items, func(a, b int) bool { return is.Items[a].Created > is.Items[b].Created })
	for _, i := range is.Items {
		if i.Labels[runtime.LabelInstallation] != installation {
			continue
		}
		_, err := cli.ImageRemove(ctx, i.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	errs = append(errs, err)
	for _, n := range ns.Items {
		if n.Labels[runtime.LabelInstallation] != installation {
			continue
		}
		_, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Leftovers names the containers and volumes labelled with the
// installation (and, when id is not empty, the container id) that the
// engine at host still holds.
func Leftovers(ctx context.Context, host, installation, id string) ([]string, error) {
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	f := client.Filters{}.Add("label", runtime.LabelInstallation+"="+installation)
	if id != "" {
		f = f.Add("label", runtime.LabelContainer+"="+id)
	}
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	// Podman joins label filters of volumes with "or": check each.
	match := func(l map[string]string) bool {
		return l[runtime.LabelInstallation] == installation && (id == "" || l[runtime.LabelContainer] == id)
	}
	for _, c := range cs.Items {
		if !match(c.Labels) {
			continue
		}
		out = append(out, fmt.Sprintf("container %s %v", c.ID[:12], c.Names))
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, v := range vs.Items {
		if !match(v.Labels) {
			continue
		}
		out = append(out, "volume "+v.Name)
	}
	is, err := cli.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, i := range is.Items {
		if !match(i.Labels) {
			continue
		}
		out = append(out, fmt.Sprintf("image %s %v", strings.TrimPrefix(i.ID, "sha256:")[:12], i.RepoTags))
	}
	sort.Strings(out)
	return out, nil
}
