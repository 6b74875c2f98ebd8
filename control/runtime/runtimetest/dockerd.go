package runtimetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Dockerd starts a Docker engine of the test's own beside the shared one
// and answers its host: its own socket, data root, exec root (with the
// containerd it starts), pidfile and default bridge, and iptables left
// to the shared engine, so neither's networks or rules clash. Its
// networks take subnets from a pool of its own. The engine, everything
// in it and its directories go when the test ends.
func Dockerd(t testing.TB) string {
	t.Helper()
	host, _ := DockerdRestartable(t)
	return host
}

// DockerdRestartable is Dockerd with a restart: the engine stops (SIGTERM:
// it stops its containers, as on a host's shutdown) and starts again on
// the same state, where containers with a restart policy start again.
func DockerdRestartable(t testing.TB) (host string, restart func()) {
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
	host = "unix://" + sock
	pool := fmt.Sprintf("base=10.%d.%d.0/24,size=28", 100+rand.IntN(100), rand.IntN(250))
	// A default bridge of its own: `--bridge=none` would make dockerd
	// delete the host's docker0 at start, the shared engine's bridge.
	br := fmt.Sprintf("dhd%06x", rand.IntN(1<<24))
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", br).Run() })
	for _, args := range [][]string{{"link", "add", br, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("10.%d.%d.1/24", 200+rand.IntN(40), rand.IntN(250)), "dev", br}, {"link", "set", br, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	cmd := exec.Command(bin, "--host", host, "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "x"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"), "--bridge", br, "--iptables=false", "--ip6tables=false",
		"--default-address-pool", pool)
	// A daemon killed mid-way may leave its mounts: detached before the
	// directory goes.
	again := serveEngine(t, "dockerd", cmd, host, dir, "dockerd.log", 30*time.Second, 60*time.Second,
		filepath.Join(dir, "data", "overlay2"), filepath.Join(dir, "x"), filepath.Join(dir, "data"))
	return host, func() {
		t.Helper()
		// A dockerd started again on its state deletes the host's docker0
		// (the shared engine's bridge), whatever its own --bridge: put it
		// back as it was.
		addrs, had := hostBridge()
		again()
		if _, still := hostBridge(); had && !still {
			for _, args := range append([][]string{{"link", "add", "docker0", "type", "bridge"}},
				append(addrArgs(addrs), []string{"link", "set", "docker0", "up"})...) {
				if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
					t.Errorf("put docker0 back: ip %v: %v %s", args, err, out)
				}
			}
		}
	}
}

// hostBridge answers the host's docker0 addresses (CIDR) and whether it
// exists.
func hostBridge() ([]string, bool) {
	out, err := exec.Command("ip", "-o", "addr", "show", "dev", "docker0").Output()
	if err != nil {
		return nil, false
	}
	var addrs []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "inet" || f[i] == "inet6" {
				if !strings.HasPrefix(f[i+1], "fe80:") {
					addrs = append(addrs, f[i+1])
				}
			}
		}
	}
	return addrs, true
}

// addrArgs are the ip arguments that add addrs to docker0.
func addrArgs(addrs []string) [][]string {
	out := make([][]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, []string{"addr", "add", a, "dev", "docker0"})
	}
	return out
}
