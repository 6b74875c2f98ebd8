package runtimetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
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
	pool := fmt.Sprintf("base=10.%d.%d.0/24,size=28", 100+rand.IntN(100), rand.IntN(250))
	cmd := exec.Command(bin, "--host", host, "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "x"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"), "--bridge=none", "--iptables=false", "--ip6tables=false",
		"--default-address-pool", pool)
	// A daemon killed mid-way may leave its mounts: detached before the
	// directory goes.
	return serveEngine(t, "dockerd", cmd, host, dir, "dockerd.log", 30*time.Second, 60*time.Second,
		filepath.Join(dir, "data", "overlay2"), filepath.Join(dir, "x"), filepath.Join(dir, "data"))
}
