// Package imagee2e builds the container images with scripts/image.sh (what
// `make image` runs) into the local engine and runs them there: the agent
// is PID 1 and answers its gateway, what it runs for its users runs as
// `user` (uid 1000) with a real Debian userland, and the desktop image's
// X server, session bus and accessibility bus come up under the agent. It
// also checks scripts/engine.sh starting and stopping a dockerd of its
// own. Every engine object a test makes carries the label
// deckhand.test=imagee2e and is removed by it; the imported root file
// systems (deckhand/rootfs:*) are the build's cache and stay.
package imagee2e_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const label = "deckhand.test=imagee2e"

// repoRoot is the repository's root: this package is scripts/imagee2e.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "image.sh")); err != nil {
		t.Fatal(err)
	}
	return root
}

func need(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("building images (mmdebstrap) and driving the engine need root")
	}
	for _, c := range []string{"docker", "mmdebstrap"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s is missing (scripts/setup.sh installs it)", c)
		}
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Fatalf("no engine answers (scripts/engine.sh start; make test starts it): %v %s", err, out)
	}
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// binDir holds deckhand and deckhand-display for the build: $DECKHAND_BIN's
// when it has them, else built here (deckhand-display links X libraries
// with cgo).
func binDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, pkg := range map[string]string{"deckhand": "./agent/cmd/deckhand", "deckhand-display": "./display/cmd/deckhand-display"} {
		if d := os.Getenv("DECKHAND_BIN"); d != "" {
			if _, err := os.Stat(filepath.Join(d, name)); err == nil {
				if err := os.Symlink(filepath.Join(d, name), filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
				continue
			}
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), map[bool]string{true: "CGO_ENABLED=1", false: "CGO_ENABLED=0"}[name == "deckhand-display"])
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	return dir
}

var (
	buildOnce sync.Once
	buildTag  string
	buildErr  error
	buildLog  string
)

// images builds both images once for the package under a tag of its own
// (removed when the package's tests end: see TestMain), so runs on one
// engine never share a tag.
func images(t *testing.T) string {
	t.Helper()
	need(t)
	buildOnce.Do(func() {
		var b [6]byte
		_, _ = rand.Read(b[:])
		tag := "e2e-" + hex.EncodeToString(b[:])
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "image.sh"), tag)
		cmd.Env = append(os.Environ(), "BIN="+binDir(t))
		out, err := cmd.CombinedOutput()
		buildLog = string(out)
		if err != nil {
			buildErr = fmt.Errorf("scripts/image.sh: %v\n%s", err, out)
			return
		}
		buildTag = tag
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	t.Logf("%s", buildLog)
	return buildTag
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildTag != "" {
		_ = exec.Command("docker", "rmi", "deckhand/base:"+buildTag, "deckhand/desktop:"+buildTag).Run()
	}
	os.Exit(code)
}

// container runs image detached with the test's label and removes it at
// the end; it answers the container's name.
func container(t *testing.T, image string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "deckhand-imagee2e-" + hex.EncodeToString(b[:])
	docker(t, "run", "-d", "--label", label, "--name", name, image)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "logs", "--tail", "60", name).CombinedOutput()
			t.Logf("docker logs %s:\n%s", name, out)
		}
		_ = exec.Command("docker", "rm", "-f", "-v", name).Run()
	})
	return name
}

// call sends one request to the agent's gateway from inside the container
// (loopback, root: a client the agent trusts without a credential) and
// answers the status and body.
func call(t *testing.T, name, method, path, body string) (int, string) {
	t.Helper()
	args := []string{"exec", name, "curl", "-sS", "-m", "30", "-o", "/dev/stdout", "-w", "\n%{http_code}", "-X", method,
		"http://127.0.0.1:7700" + path}
	if body != "" {
		args = append(args, "-H", "Content-Type: application/json", "--data", body)
	}
	out, err := exec.Command("docker", args...).CombinedOutput()
	s := string(out)
	i := strings.LastIndexByte(s, '\n')
	if err != nil || i < 0 {
		return 0, s
	}
	code := 0
	fmt.Sscanf(s[i+1:], "%d", &code)
	return code, s[:i]
}

// waitFor polls until ok says so (hang guard: deadline).
func waitFor(t *testing.T, what string, deadline time.Duration, ok func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		done, last := ok()
		if done {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s; last: %s", what, deadline, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

type runResult struct {
	Stdout, Stderr string
	ExitCode       int `json:"exit_code"`
}

// run runs argv through the process service and answers its result.
func run(t *testing.T, name string, spec map[string]any) runResult {
	t.Helper()
	raw, _ := json.Marshal(spec)
	code, body := call(t, name, "POST", "/_/process/api/v1/process/run", string(raw))
	var r runResult
	if code != 200 || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("process run %s: %d %s", raw, code, body)
	}
	return r
}

func agentUp(t *testing.T, name string) {
	t.Helper()
	waitFor(t, "the agent's gateway", 60*time.Second, func() (bool, string) {
		code, body := call(t, name, "GET", "/_agent/status", "")
		return code == 200, fmt.Sprint(code, " ", body)
	})
}

// The base image: deckhand is PID 1 (its init, the agent its child), the
// gateway answers on the container's address, and a command runs as user
// (uid 1000, home /home/user) with bash, python3, git, curl and a working
// dpkg/apt; a request may still ask for root. The agent's data is not the
// user's to read.
func TestBaseImage(t *testing.T) {
	tag := images(t)
	name := container(t, "deckhand/base:"+tag)
	agentUp(t, name)

	if comm := docker(t, "exec", name, "cat", "/proc/1/comm"); comm != "deckhand" {
		t.Fatalf("PID 1 is %q, want deckhand", comm)
	}
	_, body := call(t, name, "GET", "/_agent/status", "")
	var st struct{ Agent struct{ PID int } }
	if json.Unmarshal([]byte(body), &st) != nil || st.Agent.PID <= 1 {
		t.Fatalf("agent status %s: the agent runs under deckhand's init (PID 1)", body)
	}
	// From the engine's network the gateway answers too: a caller without
	// a credential is refused by the agent, in its envelope.
	ip := docker(t, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name)
	out, err := exec.Command("curl", "-sS", "-m", "10", "-w", "\n%{http_code}", "http://"+ip+":7700/_/process/api/v1/process").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(`"code"`)) || !(bytes.HasSuffix(out, []byte("401")) || bytes.HasSuffix(out, []byte("403"))) {
		t.Fatalf("the gateway from the engine's network: %v %s", err, out)
	}

	r := run(t, name, map[string]any{"cmd": []string{"sh", "-c", `id -u; id -un; echo "$HOME"; pwd`}})
	if r.ExitCode != 0 || r.Stdout != "1000\nuser\n/home/user\n/home/user\n" {
		t.Fatalf("a command runs as user in its home: %+v", r)
	}
	r = run(t, name, map[string]any{"cmd": []string{"id", "-u"}, "user": "root"})
	if r.ExitCode != 0 || r.Stdout != "0\n" {
		t.Fatalf("user root when asked: %+v", r)
	}
	r = run(t, name, map[string]any{"cmd": []string{"bash", "-c",
		`set -e; python3 -c 'print(6*7)'; git --version; curl --version | head -n1; apt-get --version | head -n1
		 dpkg -l bash coreutils ca-certificates curl git python3 procps | grep -c '^ii'; test -w "$HOME"`}})
	if r.ExitCode != 0 || !strings.HasPrefix(r.Stdout, "42\ngit version ") || !strings.Contains(r.Stdout, "\napt ") ||
		!strings.HasSuffix(r.Stdout, "\n7\n") {
		t.Fatalf("the userland: %+v", r)
	}
	r = run(t, name, map[string]any{"cmd": []string{"ls", "/var/lib/deckhand"}})
	if r.ExitCode == 0 {
		t.Fatalf("user lists the agent's data: %+v", r)
	}

	// A terminal's shell runs as user too, in its home.
	code, body := call(t, name, "POST", "/_/terminal/api/v1/terminal/create", "{}")
	var term struct {
		ID  string
		PID int
	}
	if code != 201 || json.Unmarshal([]byte(body), &term) != nil || term.PID <= 0 {
		t.Fatalf("terminal create: %d %s", code, body)
	}
	pid := fmt.Sprint(term.PID)
	r = run(t, name, map[string]any{"cmd": []string{"sh", "-c", "stat -c %U /proc/" + pid + "; readlink /proc/" + pid + "/cwd"}})
	if r.ExitCode != 0 || r.Stdout != "user\n/home/user\n" {
		t.Fatalf("the terminal's shell: %+v", r)
	}
	if code, body := call(t, name, "DELETE", "/_/terminal/api/v1/terminal/"+term.ID, ""); code >= 300 {
		t.Fatalf("terminal delete: %d %s", code, body)
	}
}

// The desktop image: the agent's daemon service keeps Xvfb, the session
// D-Bus, openbox and the accessibility bus running as user; the display
// service sees the 1280x800 screen and answers the accessibility tree.
func TestDesktopImage(t *testing.T) {
	tag := images(t)
	name := container(t, "deckhand/desktop:"+tag)
	agentUp(t, name)

	waitFor(t, "the desktop's programs", 90*time.Second, func() (bool, string) {
		code, body := call(t, name, "GET", "/_/daemon/api/v1/daemon/programs", "")
		return code == 200 && strings.Count(body, `"state":"running"`) == 4, body
	})
	r := run(t, name, map[string]any{"cmd": []string{"ps", "-o", "user=", "-C", "Xvfb,dbus-daemon,openbox,at-spi-bus-launcher"}})
	if r.ExitCode != 0 || strings.Count(r.Stdout, "user\n") < 4 || strings.Contains(r.Stdout, "root") {
		t.Fatalf("the desktop runs as user: %+v", r)
	}
	waitFor(t, "the display service's screen", 60*time.Second, func() (bool, string) {
		code, body := call(t, name, "GET", "/_/display/api/v1/display/info", "")
		return code == 200 && strings.Contains(body, `"width":1280`), fmt.Sprint(code, " ", body)
	})
	// The display service finds the accessibility bus through the session
	// bus (it retries every few seconds until the bus answers).
	waitFor(t, "the accessibility tree", 60*time.Second, func() (bool, string) {
		code, body := call(t, name, "GET", "/_/display/api/v1/display/accessibility?scope=all", "")
		return code == 200 && strings.Contains(body, `"nodes"`), fmt.Sprint(code, " ", body)
	})
}

// scripts/engine.sh, in mount, network and PID namespaces of its own where
// nothing answers on /var/run/docker.sock (a private /run, /var/lib/docker
// and /proc): start brings up a dockerd it records as its own, a second
// start finds it running and starts nothing, stop ends the one it started,
// and a stop with none of its own touches nothing.
func TestEngineScript(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces and dockerd need root")
	}
	for _, c := range []string{"dockerd", "unshare", "curl"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s is missing (scripts/setup.sh installs it)", c)
		}
	}
	dir := t.TempDir()
	for _, d := range []string{"docker", "state"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(repoRoot(t), "scripts", "engine.sh")
	sh := `set -u
mount -t tmpfs tmpfs /run && mount -t proc proc /proc && mount --bind "$1/docker" /var/lib/docker && ip link set lo up || exit 9
e() { DECKHAND_ENGINE_STATE="$1/state" bash "$2" "$3"; echo "rc=$?"; }
e "$1" "$2" status
e "$1" "$2" start
test -d /run/podman && echo podman-dir
e "$1" "$2" start
curl -sS --unix-socket /var/run/docker.sock http://engine/_ping; echo
e "$1" "$2" stop
e "$1" "$2" status
e "$1" "$2" stop
test -e "$1/state/dockerd.pid" && echo pidfile-left
pgrep -x dockerd || echo no-dockerd`
	out, err := exec.Command("timeout", "180", "unshare", "--mount", "--net", "--pid", "--fork", "--propagation", "private",
		"bash", "-c", sh, "engine-test", dir, script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"rc=1\nengine: started ", "rc=0\npodman-dir\nengine: running\nrc=0\nOK\nengine: stopped ",
		"rc=0\nrc=1\nengine: none of ours runs\nrc=0\nno-dockerd\n",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("engine.sh: missing %q in:\n%s", want, got)
		}
	}
	if log, err := os.ReadFile(filepath.Join(dir, "state", "dockerd.log")); err != nil || !bytes.Contains(log, []byte("API listen on /var/run/docker.sock")) {
		t.Fatalf("dockerd's log in the state dir: %v\n%s", err, log)
	}
}
