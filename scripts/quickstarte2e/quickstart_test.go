// Package quickstarte2e runs README.md's quickstart, exactly as written,
// against a fresh start of scripts/run.sh (what `make run` starts: a
// container on the local engine), starts it again on the same data dir,
// and checks that a second start while one runs refuses and leaves the
// first one serving (with RUNTIME=none, the agent on this machine, as the
// other tests here run it).
package quickstarte2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"deckhand/control/runtime"
	"deckhand/control/runtime/runtimetest"
	"deckhand/platform/platformtest"
	"deckhand/platform/proc"
)

// repoRoot is the repository's root: this package is scripts/quickstarte2e.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "run.sh")); err != nil {
		t.Fatal(err)
	}
	return root
}

// binDir is one directory holding deckhand and deckhand-control (and
// deckhand-display when $DECKHAND_BIN has it), as scripts/run.sh expects.
func binDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, pkg := range map[string]string{
		"deckhand":         "deckhand/agent/cmd/deckhand",
		"deckhand-control": "deckhand/control/cmd/deckhand-control",
	} {
		path, cleanup, err := platformtest.Binary(name, pkg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cleanup)
		if err := os.Symlink(path, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if d := os.Getenv("DECKHAND_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "deckhand-display")); err == nil {
			if err := os.Symlink(filepath.Join(d, "deckhand-display"), filepath.Join(dir, "deckhand-display")); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// instance is one scripts/run.sh.
type instance struct {
	cmd                  *exec.Cmd
	out                  *platformtest.SyncBuffer
	done                 chan error
	data                 string
	controlAddr, gateway string
	env                  []string
}

// ports: the gateway at base, its services at base+1..16, the control plane
// at base+17, two more for the quickstart's tunnel at base+18 and base+19,
// the platform proxy at base+20.
const span = 21

// runScript starts scripts/run.sh on data with the given addresses, and
// stops it (SIGTERM, as Ctrl-C) at the test's end.
func runScript(t *testing.T, root, bin, data string, base int, extra ...string) *instance {
	t.Helper()
	in := &instance{
		out: &platformtest.SyncBuffer{}, done: make(chan error, 1), data: data,
		controlAddr: "127.0.0.1:" + strconv.Itoa(base+17), gateway: "127.0.0.1:" + strconv.Itoa(base),
	}
	in.env = append(os.Environ(), "DECKHAND_RUN_DATA="+data, "DECKHAND_BIN="+bin,
		"CONTROL_LISTEN="+in.controlAddr, "AGENT_LISTEN="+in.gateway, "PROXY_LISTEN=127.0.0.1:"+strconv.Itoa(base+20))
	in.env = append(in.env, extra...)
	in.cmd = exec.Command("bash", filepath.Join(root, "scripts", "run.sh"))
	in.cmd.Env = in.env
	in.cmd.Stdout, in.cmd.Stderr = in.out, in.out
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { in.done <- in.cmd.Wait() }()
	t.Cleanup(func() { in.stop(t) })
	return in
}

// waitReady waits for the script's "deckhand is running." or its end.
func (in *instance) waitReady(t *testing.T) {
	t.Helper()
	in.waitReadyWithin(t, 3*time.Minute)
}

// waitReadyWithin is waitReady with its own bound: a first start with the
// docker runtime may build the image's root file system (minutes, once
// per engine; scripts/image.sh keeps it).
func (in *instance) waitReadyWithin(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for !strings.Contains(in.out.String(), "Ctrl-C stops everything.") {
		select {
		case err := <-in.done:
			in.done <- err
			t.Fatalf("scripts/run.sh ended (%v) before it was ready:\n%s\ncontrol.log:\n%s\nagent.log:\n%s",
				err, in.out.String(), tail(filepath.Join(in.data, "control.log")), tail(filepath.Join(in.data, "agent.log")))
		case <-deadline:
			t.Fatalf("scripts/run.sh is not ready after %s:\n%s", within, in.out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM to the script, which stops what it started; the
// process group is killed only when the script does not end.
func (in *instance) stop(t *testing.T) {
	select {
	case err := <-in.done:
		in.done <- err
		return
	default:
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-in.done:
		in.done <- err
	case <-time.After(time.Minute):
		_ = proc.KillGroup(in.cmd.Process.Pid, syscall.SIGKILL)
		<-in.done
		t.Errorf("scripts/run.sh did not stop on SIGTERM within a minute:\n%s", in.out.String())
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// quickstart is README.md's block between the quickstart markers.
var quickstart = regexp.MustCompile("(?s)<!-- quickstart -->\\s*```sh\\n(.*?)```\\s*<!-- /quickstart -->")

func TestReadmeQuickstartRuns(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := quickstart.FindAllSubmatch(readme, -1)
	if len(m) != 1 {
		t.Fatalf("README.md has %d quickstart blocks (<!-- quickstart --> ```sh ... ``` <!-- /quickstart -->), want 1", len(m))
	}
	block := string(m[0][1])

	host := runtimetest.DockerHost(t)
	bin := binDir(t)
	forgetImage(t, host, bin)
	work := t.TempDir()
	data := filepath.Join(work, "data")
	base := platformtest.FreePortBase(t, span)
	in := runScript(t, root, bin, data, base)
	purgeInstallation(t, host, data)
	in.waitReadyWithin(t, 15*time.Minute)
	first := containerLine.FindString(in.out.String())
	if first == "" {
		t.Fatalf("run.sh names no running container:\n%s", in.out.String())
	}

	// The block is written for the default addresses; this run uses free
	// ones. Each replaced text must be in the block, so an edit of the
	// README that drops one fails here instead of testing something else.
	for _, r := range []struct{ from, to string }{
		{"127.0.0.1:8080", in.controlAddr},
		{"http.server 8000", "http.server " + strconv.Itoa(base+18)},
		{"--remote 8000", "--remote " + strconv.Itoa(base+18)},
		{"127.0.0.1:8001", "127.0.0.1:" + strconv.Itoa(base+19)},
	} {
		if !strings.Contains(block, r.from) {
			t.Fatalf("the quickstart no longer contains %q; update this test's replacements", r.from)
		}
		block = strings.ReplaceAll(block, r.from, r.to)
	}

	// The block runs in one shell, as pasted into a terminal at the
	// repository's root (bin/ and data/ are this run's), stopping at the
	// first command that fails; -x names it in the output.
	if err := os.Symlink(bin, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	out := quickstartShell(t, work, "set -euxo pipefail\n"+block, in)
	// What the block's commands show, besides their exit status: the
	// container's kernel, the file copied, the proxy's answer run as the
	// image's user, the page through the tunnel.
	for _, want := range []string{"me@example.com", "Linux", "hello.txt", "through the proxy as user", "served in the container"} {
		if !strings.Contains(out, want) {
			t.Errorf("the quickstart's output lacks %q:\n%s", want, out)
		}
	}

	// Stopped and started again on the same data dir, it runs the same
	// container (stopped with it, started again with its workspace), and
	// the first commands it prints work as printed.
	in.stop(t)
	again := runScript(t, root, bin, data, platformtest.FreePortBase(t, span))
	again.waitReady(t)
	if got := containerLine.FindString(again.out.String()); got != first {
		t.Fatalf("the second start runs %q, the first ran %q:\n%s", got, first, again.out.String())
	}
	fc := regexp.MustCompile(`(?s)First commands[^\n]*\n(.*?)Ctrl-C stops everything`).FindStringSubmatch(again.out.String())
	if fc == nil || !strings.Contains(fc[1], "deckhand exec --container") || !strings.Contains(fc[1], "deckhand login") {
		t.Fatalf("run.sh prints no first commands with exec and login:\n%s", again.out.String())
	}
	if out := quickstartShell(t, t.TempDir(), "set -euxo pipefail\n"+fc[1], again); !strings.Contains(out, "Linux") || !strings.Contains(out, "TOKEN") {
		t.Fatalf("run.sh's first commands:\n%s", out)
	}
}

// containerLine is the line run.sh prints of its container.
var containerLine = regexp.MustCompile(`(?m)^\s*container\s+\S+ in project \S+, running`)

// quickstartShell runs script with bash in dir, with a config of its own
// and no agent address or token from the caller, and answers its output.
func quickstartShell(t *testing.T, dir, script string, in *instance) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", script)
	sh.Dir = dir
	sh.Env = append(os.Environ(), "DECKHAND_CONFIG="+filepath.Join(dir, "config", "config.json"),
		"DECKHAND_AGENT_URL=", "DECKHAND_TOKEN=")
	var out bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sh.Cancel = func() error { return proc.KillGroup(sh.Process.Pid, syscall.SIGKILL) }
	if err := sh.Run(); err != nil {
		t.Fatalf("the commands failed: %v\n%s\ncontrol.log:\n%s", err, out.String(), tail(filepath.Join(in.data, "control.log")))
	}
	return out.String()
}

// forgetImage removes, when the test ends, the deckhand/base image of
// bin's version when run.sh is the one that builds it (its root file
// system stays cached in the engine, as scripts/image.sh keeps it).
func forgetImage(t *testing.T, host, bin string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "deckhand-control"), "version").Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 2 {
		t.Fatalf("deckhand-control version: %v %q", err, out)
	}
	ref := "deckhand/base:" + f[1]
	cli := runtimetest.Client(t, host)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{})
	})
}

// purgeInstallation removes, when the test ends (after run.sh stopped:
// cleanups run last first), every engine object of the control plane
// run.sh ran on data: its installation is the label of the container it
// made (container.env).
func purgeInstallation(t *testing.T, host, data string) {
	t.Cleanup(func() {
		env, err := os.ReadFile(filepath.Join(data, "container.env"))
		if err != nil {
			return
		}
		id := regexp.MustCompile(`(?m)^CONTAINER_ID=(\S+)$`).FindSubmatch(env)
		if id == nil {
			return
		}
		cli := runtimetest.Client(t, host)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: client.Filters{}.Add("label", runtime.LabelContainer+"="+string(id[1]))})
		if err != nil || len(cs.Items) == 0 {
			t.Errorf("run.sh's container %s is not in the engine: %v", id[1], err)
			return
		}
		if err := runtimetest.Purge(ctx, host, cs.Items[0].Labels[runtime.LabelInstallation]); err != nil {
			t.Errorf("purge run.sh's installation: %v", err)
		}
	})
}

func controlAnswers(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/meta/public-key")
	if err != nil {
		t.Fatalf("the first instance's control plane does not answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the first instance's control plane answers %d", resp.StatusCode)
	}
}

func displayAnswers(disp string) error {
	cmd := exec.Command("xdpyinfo")
	cmd.Env = append(os.Environ(), "DISPLAY="+disp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

var displayLine = regexp.MustCompile(`(?m)^\s*display\s+(:\d+)\s*$`)

func TestSecondStartRefusesAndLeavesTheFirstServing(t *testing.T) {
	root := repoRoot(t)
	bin := binDir(t)
	data := filepath.Join(t.TempDir(), "data")
	first := runScript(t, root, bin, data, platformtest.FreePortBase(t, span), "RUNTIME=none")
	first.waitReady(t)

	disp := ""
	if m := displayLine.FindStringSubmatch(first.out.String()); m != nil {
		disp = m[1]
		t.Logf("the first instance's display is %s", disp)
		if err := displayAnswers(disp); err != nil {
			t.Fatalf("the first instance's display %s does not answer: %v", disp, err)
		}
	}
	logs := map[string][]byte{}
	for _, f := range []string{"control.log", "agent.log"} {
		b, err := os.ReadFile(filepath.Join(data, f))
		if err != nil {
			t.Fatal(err)
		}
		logs[f] = b
	}

	// Other addresses: were the second one to start anything, it could.
	// A refusal is quick; the bound only keeps a start that wrongly goes on
	// from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "run.sh"))
	base2 := platformtest.FreePortBase(t, span)
	second.Env = append(os.Environ(), "DECKHAND_RUN_DATA="+data, "DECKHAND_BIN="+bin,
		"CONTROL_LISTEN=127.0.0.1:"+strconv.Itoa(base2+17), "AGENT_LISTEN=127.0.0.1:"+strconv.Itoa(base2))
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("a second start on the same data dir: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{"already running on " + data, "http://" + first.controlAddr + "/api/v1", "http://" + first.gateway + "/_/terminal/"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "deckhand is running") {
		t.Errorf("the refused start claims to run:\n%s", out)
	}

	// The first one serves on, its logs intact, its display up.
	controlAnswers(t, first.controlAddr)
	resp, err := http.Get("http://" + first.gateway + "/_/cron/health")
	if err != nil {
		t.Fatalf("the first instance's agent does not answer: %v", err)
	}
	resp.Body.Close()
	for f, before := range logs {
		now, err := os.ReadFile(filepath.Join(data, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(now, before) {
			t.Errorf("%s was rewritten by the refused start", f)
		}
	}
	if disp != "" {
		if err := displayAnswers(disp); err != nil {
			t.Errorf("the first instance's display %s stopped answering after the refused start: %v", disp, err)
		}
	}
	check := func() *exec.Cmd {
		c := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "run.sh"), "--check")
		c.Env = second.Env
		return c
	}
	if out, err := check().CombinedOutput(); err == nil {
		t.Errorf("run.sh --check passes while an instance runs:\n%s", out)
	}

	// `make run` checks before it installs or builds: nothing is rebuilt
	// under a running instance. GO=false makes a build that does start fail
	// at once instead of replacing the binaries.
	mk := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", root, "run", "GO=false")
	mk.Env = append(second.Env, "MAKEFLAGS=")
	if out, err := mk.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("already running on "+data)) ||
		bytes.Contains(out, []byte("build")) {
		t.Errorf("make run with an instance running: %v, want a refusal before any build:\n%s", err, out)
	}

	// Stopped, the data dir starts again, and the logs gain a start each
	// rather than being truncated.
	first.stop(t)
	if out, err := check().CombinedOutput(); err != nil {
		t.Errorf("run.sh --check fails after the instance stopped: %v\n%s", err, out)
	}
	again := runScript(t, root, bin, data, platformtest.FreePortBase(t, span), "RUNTIME=none")
	again.waitReady(t)
	b, err := os.ReadFile(filepath.Join(data, "control.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, logs["control.log"]) || bytes.Count(b, []byte("=== scripts/run.sh started")) != 2 {
		t.Errorf("control.log was not appended to: %d start lines", bytes.Count(b, []byte("=== scripts/run.sh started")))
	}
	// The second start reuses the first's container and token.
	if !strings.Contains(again.out.String(), strings.TrimSpace(regexp.MustCompile(`container\s+\S+`).FindString(first.out.String()))) {
		t.Errorf("the restart made another container:\nfirst:\n%s\nagain:\n%s", first.out.String(), again.out.String())
	}
}

// With RUNTIME=none, the agent run.sh starts syncs the container's proxy permissions from the
// control plane with its agent token: the verified answer is kept on disk.
func TestAgentIsConnectedToTheControlPlane(t *testing.T) {
	root := repoRoot(t)
	data := filepath.Join(t.TempDir(), "data")
	in := runScript(t, root, binDir(t), data, platformtest.FreePortBase(t, span), "RUNTIME=none")
	in.waitReady(t)
	env, err := os.ReadFile(filepath.Join(data, "local.env"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^AGENT_TOKEN=agt_\S+$`).Match(env) || !regexp.MustCompile(`(?m)^CONTAINER_ID=\S+$`).Match(env) {
		t.Fatalf("local.env lacks the container or its agent token:\n%s", regexp.MustCompile(`agt_\S+`).ReplaceAll(env, []byte("agt_…")))
	}
	if fi, err := os.Stat(filepath.Join(data, "local.env")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("local.env: %v, mode %v; want 0600", err, fi.Mode())
	}
	saved := filepath.Join(data, "agent", "proxyperm", "effective.json")
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if _, err := os.Stat(saved); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never saved a verified answer of the control plane (%s):\n%s", saved, tail(filepath.Join(data, "agent.log")))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if b := tail(filepath.Join(data, "control.log")); !strings.Contains(b, "/proxy/permissions/effective") {
		t.Fatalf("the control plane saw no permissions sync:\n%s", b)
	}
	// The first commands run.sh prints work as printed: status, a command
	// in the container, the admin's login.
	m := regexp.MustCompile(`(?s)First commands[^\n]*\n(.*?)Ctrl-C stops everything`).FindStringSubmatch(in.out.String())
	if m == nil || !strings.Contains(m[1], "deckhand exec -- uname -a") || !strings.Contains(m[1], "deckhand login") {
		t.Fatalf("run.sh prints no first commands with exec and login:\n%s", in.out.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", "set -euxo pipefail\n"+m[1])
	sh.Env = append(os.Environ(), "DECKHAND_CONFIG="+filepath.Join(t.TempDir(), "config.json"), "DECKHAND_TOKEN=")
	if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), "Linux") {
		t.Fatalf("run.sh's first commands: %v\n%s", err, out)
	}
}

// An X server run.sh did not start is used, and left running when run.sh stops.
func TestRunLeavesAnotherXvfbAlone(t *testing.T) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		t.Skip("Xvfb is not installed (scripts/setup.sh installs it)")
	}
	root := repoRoot(t)
	state := t.TempDir()
	disp := ""
	for n := 150; n < 199; n++ {
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n)); errors.Is(err, os.ErrNotExist) {
			disp = fmt.Sprintf(":%d", n)
			break
		}
	}
	xvfb := func(args ...string) error {
		cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "xvfb.sh")}, args...)...)
		cmd.Env = append(os.Environ(), "XVFB_STATE="+state, "XVFB_XTERM=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("xvfb.sh %v: %v\n%s", args, err, out)
		}
		return nil
	}
	if err := xvfb("start", disp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = xvfb("stop", disp) })

	in := runScript(t, root, binDir(t), filepath.Join(t.TempDir(), "data"), platformtest.FreePortBase(t, span),
		"DISPLAY=", "DECKHAND_RUN_DISPLAY="+disp, "RUNTIME=none")
	in.waitReady(t)
	if m := displayLine.FindStringSubmatch(in.out.String()); m == nil || m[1] != disp {
		t.Fatalf("run.sh does not use the display it was given (%s):\n%s", disp, in.out.String())
	}
	in.stop(t)
	if err := displayAnswers(disp); err != nil {
		t.Fatalf("run.sh stopped an X server it did not start: %v", err)
	}
}

// TestRunGivesTheDesktopItsBusAndTheUserItsUmask: under a user's umask of
// 002, run.sh's agent writes a file put over WebDAV as 0664 (the user's
// umask, not the script's 077 for its secrets, which stay 0600), and with
// the display it starts it gets a session D-Bus with the accessibility
// bus: the tree of the xterm on that display is answered (an xterm
// exposes none, and says so), not ACCESSIBILITY_UNAVAILABLE. Run.sh stops
// the bus it started.
func TestRunGivesTheDesktopItsBusAndTheUserItsUmask(t *testing.T) {
	for _, tool := range []string{"Xvfb", "xterm", "dbus-daemon", "dbus-send"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/setup.sh installs it)", tool)
		}
	}
	bin := binDir(t)
	if _, err := os.Stat(filepath.Join(bin, "deckhand-display")); err != nil {
		t.Skip("deckhand-display is not in $DECKHAND_BIN (make build)")
	}
	root := repoRoot(t)
	data := filepath.Join(t.TempDir(), "data")
	// No session bus of the caller's: run.sh starts one for its display.
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("AT_SPI_BUS_ADDRESS", "")
	// The user's shell umask is what run.sh inherits; this package's
	// tests run one at a time, so setting the process's is safe.
	old := syscall.Umask(0o002)
	in := runScript(t, root, bin, data, platformtest.FreePortBase(t, span), "DISPLAY=", "RUNTIME=none")
	syscall.Umask(old)
	in.waitReady(t)

	for _, f := range []string{"admin-login.txt", "local.env"} {
		if fi, err := os.Stat(filepath.Join(data, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}
	dir := t.TempDir()
	put, _ := http.NewRequest("PUT", "http://"+in.gateway+"/_/files/dav"+dir+"/put.txt", strings.NewReader("hello\n"))
	resp, err := http.DefaultClient.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("WebDAV PUT: %d", resp.StatusCode)
	}
	if fi, err := os.Stat(filepath.Join(dir, "put.txt")); err != nil || fi.Mode().Perm() != 0o664 {
		t.Fatalf("the file put over WebDAV: %v mode %v, want 0664 (the user's umask 002)", err, fi.Mode().Perm())
	}

	m := displayLine.FindStringSubmatch(in.out.String())
	if m == nil {
		t.Fatalf("run.sh started no display:\n%s", in.out.String())
	}
	if !regexp.MustCompile(`(?m)^\s*session bus\s+unix:`).MatchString(in.out.String()) {
		t.Fatalf("run.sh started no session bus:\n%s", in.out.String())
	}
	// xvfb.sh starts an xterm on the display it starts; the tree of the
	// active window (the xterm, once focused) or of every application is
	// answered.
	url := "http://" + in.gateway + "/_/display/api/v1/display/accessibility"
	var body []byte
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := http.Get(url + "?scope=all")
		if err != nil {
			t.Fatal(err)
		}
		body = make([]byte, 4096)
		n, _ := resp.Body.Read(body)
		body = body[:n]
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the accessibility tree under run.sh: %d %s\nagent.log:\n%s", resp.StatusCode, body, tail(filepath.Join(data, "agent.log")))
		}
		time.Sleep(500 * time.Millisecond)
	}
	resp, err = http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 4096)
	n, _ := resp.Body.Read(raw)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the active window's tree (the xterm) under run.sh: %d %s", resp.StatusCode, raw[:n])
	}

	// The bus run.sh started ends with it.
	bus := regexp.MustCompile(`(?m)^\s*session bus\s+(unix:\S+)`).FindStringSubmatch(in.out.String())[1]
	in.stop(t)
	probe := exec.Command("dbus-send", "--bus="+bus, "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.GetId")
	if out, err := probe.CombinedOutput(); err == nil {
		t.Fatalf("the session bus run.sh started still answers after it stopped: %s", out)
	}
}
