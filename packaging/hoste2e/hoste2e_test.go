// Package hoste2e checks the packaging on this host: systemd accepts the
// units, and the Debian packages install, run as their users, and leave
// nothing behind when purged. The agent as PID 1 reaping orphans is
// agent/e2e's TestAsPID1 (the real binary under unshare --pid).
package hoste2e

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

var agentBin, controlBin string

func TestMain(m *testing.M) {
	var c1, c2 func()
	var err error
	agentBin, c1, err = platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
	if err == nil {
		controlBin, c2, err = platformtest.Binary("deckhand-control", "deckhand/control/cmd/deckhand-control")
	}
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	code := m.Run()
	c1()
	c2()
	os.Exit(code)
}

// repo is the repository root (this package is packaging/hoste2e).
func repo(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

var units = []string{"deckhand.service", "deckhand.socket", "deckhand-control.service", "deckhand-control.socket"}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestUnitsVerify runs `systemd-analyze verify` on the units in a root
// that holds the host's system units and the binaries they name: any
// warning (an unknown key, a missing executable, a bad dependency) fails.
func TestUnitsVerify(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatal("systemd-analyze is missing (scripts/setup.sh installs the systemd package)")
	}
	root := t.TempDir()
	for _, d := range []string{"etc/systemd/system", "usr/bin", "usr/lib/systemd"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range [][2]string{{"usr/bin", "bin"}, {"usr/lib", "lib"}} {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/"))
	run(t, "cp", agentBin, filepath.Join(root, "usr/bin/deckhand"))
	run(t, "cp", controlBin, filepath.Join(root, "usr/bin/deckhand-control"))
	run(t, "cp", "/usr/bin/kill", filepath.Join(root, "usr/bin/kill"))
	for _, u := range units {
		run(t, "cp", filepath.Join(repo(t), "packaging", u), filepath.Join(root, "etc/systemd/system", u))
	}
	cmd := exec.Command("systemd-analyze", append([]string{"verify", "--root=" + root}, units...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDebInstallPurge builds both packages, installs them with dpkg,
// checks files, users and modes, starts the control plane as its user the
// way the unit does, then removes (data and conffiles stay) and purges
// (nothing stays).
func TestDebInstallPurge(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dpkg -i needs root")
	}
	dist := t.TempDir()
	binDir := filepath.Dir(agentBin)
	if filepath.Dir(controlBin) != binDir {
		binDir = t.TempDir()
		run(t, "cp", agentBin, filepath.Join(binDir, "deckhand"))
		run(t, "cp", controlBin, filepath.Join(binDir, "deckhand-control"))
	}
	out := run(t, packager(t), "deb", "--version", "v1.2.3-4-gabcdef0", "--arch", "amd64", "--bin", binDir,
		"--packaging", filepath.Join(repo(t), "packaging"), "--docs", filepath.Join(repo(t), "docs", "operating", "operations.md"), "--out", dist)
	debs := strings.Fields(out)
	if len(debs) != 2 || !strings.HasSuffix(debs[0], "deckhand_1.2.3+4.gabcdef0_amd64.deb") {
		t.Fatalf("packages: %q", out)
	}
	pkgs := []string{"deckhand", "deckhand-control"}
	dpkg := func(args ...string) string {
		t.Helper()
		for range 60 { // another apt or dpkg run holds the lock: wait for it
			out, err := exec.Command("dpkg", args...).CombinedOutput()
			if err == nil {
				return string(out)
			}
			if !strings.Contains(string(out), "lock") {
				t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			time.Sleep(2 * time.Second)
		}
		t.Fatalf("dpkg %s: the dpkg lock stayed taken", strings.Join(args, " "))
		return ""
	}
	dpkg(append([]string{"--purge"}, pkgs...)...) // a run that died before its cleanup
	t.Cleanup(func() { _ = exec.Command("dpkg", append([]string{"--purge"}, pkgs...)...).Run() })
	dpkg(append([]string{"-i"}, debs...)...)

	for _, f := range []string{"/usr/bin/deckhand", "/usr/bin/deckhand-control", "/lib/systemd/system/deckhand.service",
		"/lib/systemd/system/deckhand.socket", "/lib/systemd/system/deckhand-control.service", "/lib/systemd/system/deckhand-control.socket",
		"/etc/default/deckhand", "/etc/default/deckhand-control", "/usr/share/doc/deckhand-control/operations.md"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after install: %v", err)
		}
	}
	if v := run(t, "/usr/bin/deckhand-control", "version"); !strings.Contains(v, "deckhand-control") {
		t.Errorf("version: %q", v)
	}
	for _, u := range []string{"deckhand", "deckhand-control"} {
		if _, err := user.Lookup(u); err != nil {
			t.Errorf("system user %s: %v", u, err)
		}
	}
	for _, d := range []string{"/var/lib/deckhand", "/var/lib/deckhand-control", "/etc/deckhand-control"} {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a 0700 directory", d, st, err)
		}
	}
	if owner := strings.TrimSpace(run(t, "stat", "-c", "%U", "/etc/deckhand-control")); owner != "deckhand-control" {
		t.Errorf("/etc/deckhand-control owned by %s", owner)
	}
	// The control plane as its unit runs it: its user, its dirs, the master
	// key created in the key dir at the first start.
	u, err := user.Lookup("deckhand-control")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	srv := exec.Command("/usr/bin/deckhand-control", "serve", "--listen", "127.0.0.1:0",
		"--data", "/var/lib/deckhand-control", "--master-key-file", "/etc/deckhand-control/master.key", "--log-level", "warn")
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	srv.WaitDelay = 10 * time.Second
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr platformtest.SyncBuffer
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-platformtest.WatchListening(stdout, nil, nil):
	case <-time.After(30 * time.Second):
		t.Errorf("the packaged control plane did not start as its user: %s", stderr.String())
	}
	_ = srv.Process.Signal(os.Interrupt)
	_ = srv.Wait()
	if owner := strings.TrimSpace(run(t, "stat", "-c", "%U %a", "/etc/deckhand-control/master.key")); owner != "deckhand-control 600" {
		t.Errorf("master key: %s", owner)
	}
	if _, err := os.Stat("/var/lib/deckhand-control/control.db"); err != nil {
		t.Error(err)
	}
	// The installed units pass verify too (their binaries now exist).
	if out, err := exec.Command("systemd-analyze", "verify", "/lib/systemd/system/deckhand-control.service",
		"/lib/systemd/system/deckhand.service").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("verify installed units: %v\n%s", err, out)
	}

	dpkg(append([]string{"-r"}, pkgs...)...)
	for _, f := range []string{"/usr/bin/deckhand", "/usr/bin/deckhand-control", "/lib/systemd/system/deckhand.service", "/lib/systemd/system/deckhand-control.socket"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("after dpkg -r: %s is still there", f)
		}
	}
	for _, f := range []string{"/etc/default/deckhand-control", "/var/lib/deckhand-control/control.db", "/etc/deckhand-control/master.key"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("dpkg -r must keep configuration and data: %v", err)
		}
	}
	dpkg(append([]string{"--purge"}, pkgs...)...)
	for _, f := range []string{"/etc/default/deckhand", "/etc/default/deckhand-control", "/var/lib/deckhand", "/var/lib/deckhand-control",
		"/etc/deckhand-control", "/usr/share/doc/deckhand", "/usr/share/doc/deckhand-control"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("after purge: %s is still there", f)
		}
	}
	for _, u := range []string{"deckhand", "deckhand-control"} {
		if _, err := user.Lookup(u); err == nil {
			t.Errorf("after purge: user %s is still there", u)
		}
		if _, err := user.LookupGroup(u); err == nil {
			t.Errorf("after purge: group %s is still there", u)
		}
	}
	for _, p := range pkgs {
		if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).CombinedOutput(); err == nil && strings.TrimSpace(string(out)) != "" &&
			!strings.Contains(string(out), "not-installed") {
			t.Errorf("after purge: dpkg still knows %s: %s", p, out)
		}
	}
}

// packager builds packaging/build (its own module) into a temporary dir.
func packager(t *testing.T) string {
	t.Helper()
	tool := filepath.Join(t.TempDir(), "deckhand-pkg")
	build := exec.Command("go", "build", "-o", tool, ".")
	build.Dir = filepath.Join(repo(t), "packaging", "build")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the packager: %v\n%s", err, out)
	}
	return tool
}
