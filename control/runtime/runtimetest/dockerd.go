package runtimetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"deckhand/platform/proc"
)

// Dockerd starts a Docker engine of the test's own beside the shared one
// and answers its host: its own socket, data root, exec root (with the
// containerd it starts) and pidfile, no default bridge, and iptables left
// to the shared engine, so neither's networks or rules clash. Its
// networks take subnets from a pool of its own. The engine, everything
// in it and its directories go when the test ends.
func Dockerd(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		t.Skip("dockerd is not installed (scripts/setup.sh installs docker.io)")
	}
	if os.Geteuid() != 0 {
		t.Skip("a test's own dockerd runs as root")
	}
	// Short paths: containerd's sockets live under the exec root, and a
	// unix socket's path is at most 107 bytes.
	dir, err := os.MkdirTemp("/tmp", "dhd-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "d.sock")
	host := "unix://" + sock
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	pool := fmt.Sprintf("base=10.%d.%d.0/24,size=28", 100+rand.IntN(100), rand.IntN(250))
	cmd := exec.Command(bin, "--host", host, "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "x"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"), "--bridge=none", "--iptables=false", "--ip6tables=false",
		"--default-address-pool", pool)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: its containerd and shims go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dockerd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		if err := purgeAll(host); err != nil {
			t.Errorf("dockerd cleanup: %v", err)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = logf.Close()
		// A daemon killed mid-way may leave its mounts: detach them before
		// the directory goes.
		for _, m := range []string{filepath.Join(dir, "data", "overlay2"), filepath.Join(dir, "x"), filepath.Join(dir, "data")} {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove the dockerd's directory: %v", err)
		}
	})
	cli := Client(t, host)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Ping(ctx, client.PingOptions{})
		cancel()
		if err == nil {
			return host
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			t.Fatalf("dockerd ended: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			t.Fatalf("dockerd never answered at %s: %v\n%s", host, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
