package process_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"

	"deckhand/platform/platformtest"
	"deckhand/services/process"
)

// bin is the deckhand binary the end-to-end tests drive.
var bin string

func TestMain(m *testing.M) {
	platformtest.Main(m, &bin, "deckhand", "deckhand/agent/cmd/deckhand")
}

// agent is a running deckhand (run, or service process).
type agent struct {
	cmd  *exec.Cmd
	url  string // the process service's base (through the gateway for run)
	gw   string // the gateway's address (run only)
	out  *platformtest.SyncBuffer
	done chan struct{}
	init int // under unshare: the namespace's PID 1, which takes the stop signal
}

// startAgent runs `deckhand run --services process` (wrap: a command
// line it runs under, such as unshare) on a fresh port base.
func startAgent(t *testing.T, data string, wrap []string, extra ...string) *agent {
	t.Helper()
	base := platformtest.FreePortBase(t, 16)
	gw := "127.0.0.1:" + strconv.Itoa(base)
	args := append([]string{bin, "run", "--data", data, "--listen", gw, "--port-base", strconv.Itoa(base),
		"--services", "process", "--log-level", "warn"}, extra...)
	args = append(append([]string(nil), wrap...), args...)
	a := launchAgent(t, args, "http://"+gw+"/_/process", "http://127.0.0.1:"+strconv.Itoa(base+15)+"/health")
	a.gw = gw
	return a
}

// startService runs `deckhand service process` on data.
func startService(t *testing.T, data string) *agent {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	return launchAgent(t, []string{bin, "service", "process", "--data", data, "--listen", addr, "--log-level", "warn"}, "http://"+addr, "http://"+addr+"/health")
}

// launchAgent starts args and waits until health answers 200.
func launchAgent(t *testing.T, args []string, url, health string) *agent {
	t.Helper()
	a := &agent{cmd: exec.Command(args[0], args[1:]...), url: url, out: &platformtest.SyncBuffer{}, done: make(chan struct{})}
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	a.cmd.Env = cleanEnv()
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() { a.stop(syscall.SIGTERM) })
	waitFor(t, "the agent at "+url, func() bool {
		select {
		case <-a.done:
			t.Fatalf("the agent exited: %s", a.out)
		default:
		}
		resp, err := http.Get(health)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return a
}

func (a *agent) stop(sig syscall.Signal) {
	select {
	case <-a.done:
		return
	default:
	}
	if a.init != 0 {
		// unshare ignores SIGTERM while it waits for its child.
		_ = syscall.Kill(a.init, sig)
	} else {
		_ = a.cmd.Process.Signal(sig)
	}
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// cleanEnv is the test's environment without DECKHAND_ settings.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DECKHAND_") {
			out = append(out, kv)
		}
	}
	return out
}

func (a *agent) client(t *testing.T) *deckhand.Container { return sdkOf(t, a.url) }

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if v != nil {
		_ = json.Unmarshal(raw, v)
	}
	return resp.StatusCode
}

// TestRecordsSurviveTheAgent: the agent killed while a process runs; the
// record says so after a restart and what was left of the process is gone.
// An agent stopped cleanly stops its processes and records that.
func TestRecordsSurviveTheAgent(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	a := startService(t, data)
	c := a.client(t)
	ctx := t.Context()
	p, err := sdkCall[process.Process](ctx, c, http.MethodPost, "/api/v1/process",
		process.StartInput{Spec: process.Spec{Shell: "sleep 300 & echo $!; wait", Tag: "restart", ClientToken: "restart-1"}})
	if err != nil {
		t.Fatal(err)
	}
	var kid int
	waitFor(t, "the grandchild", func() bool {
		var page process.OutputPage
		getJSON(t, a.url+"/api/v1/process/"+p.ID+"/output", &page)
		if len(page.Chunks) == 0 {
			return false
		}
		kid, _ = strconv.Atoi(strings.TrimSpace(page.Chunks[0].Data))
		return kid > 0
	})
	a.stop(syscall.SIGKILL)
	waitFor(t, "the main process to die with the agent", func() bool { return gone(p.PID) })
	if gone(kid) {
		t.Fatal("the grandchild died with the agent: this test would not show the restart killing it")
	}

	b := startService(t, data)
	got, err := sdkCall[process.Process](ctx, b.client(t), http.MethodGet, "/api/v1/process/"+p.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "killed" || got.EndReason != "agent_restarted" || got.EndedAt == nil || !strings.Contains(got.Error, "agent") || got.ExitCode != nil {
		t.Fatalf("%+v", got)
	}
	waitFor(t, "the grandchild to be killed at the restart", func() bool { return gone(kid) })
	// The token still answers the same process.
	again, err := sdkCall[process.Process](ctx, b.client(t), http.MethodPost, "/api/v1/process",
		process.StartInput{Spec: process.Spec{Shell: "sleep 300 & echo $!; wait", Tag: "restart", ClientToken: "restart-1"}})
	if err != nil || again.ID != p.ID {
		t.Fatalf("%+v %v", again, err)
	}

	q, err := sdkCall[process.Process](ctx, b.client(t), http.MethodPost, "/api/v1/process",
		process.StartInput{Spec: process.Spec{Cmd: []string{"sleep", "300"}}})
	if err != nil {
		t.Fatal(err)
	}
	b.stop(syscall.SIGTERM)
	if !gone(q.PID) {
		t.Fatalf("process %d outlived the agent's clean stop", q.PID)
	}
	c2 := startService(t, data).client(t)
	if got, err := sdkCall[process.Process](ctx, c2, http.MethodGet, "/api/v1/process/"+q.ID, nil); err != nil || got.State != "killed" || got.EndReason != "agent_stopped" || got.Signal != "TERM" {
		t.Fatalf("%+v %v", got, err)
	}
}

// nsPID is the PID namespace of pid.
func nsPID(pid int) string {
	s, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return s
}

// zombiesIn lists the zombies in the PID namespace ns.
func zombiesIn(ns string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || nsPID(pid) != ns {
			continue
		}
		if procState(pid) == "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// childrenOf lists pid's children.
func childrenOf(pid int) []int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var out []int
	for _, task := range tasks {
		raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(raw)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
	}
	return out
}

// orphanMakers leave processes behind in every way: in the group, out of
// it (setsid), on a pty, killed by a timeout, failed.
var orphanMakers = []map[string]any{
	{"shell": "sleep 0.2 & exit 0"},
	{"shell": "setsid sh -c 'sleep 0.3' & exit 0"},
	{"shell": "setsid sleep 0.2 & sleep 0.1 & echo done", "pty": map[string]int{"rows": 5, "cols": 5}},
	{"shell": "sleep 0.3 & sleep 5", "timeout_ms": 100},
	{"cmd": []string{"no-such-program-here"}},
	{"shell": "(sleep 0.2 &) ; exit 3"},
}

// TestNoZombiesAsPID1: the agent as PID 1 of a PID namespace (a container
// without an init) runs processes that leave orphans every way they can;
// once they are done no zombie is left in the namespace.
func TestNoZombiesAsPID1(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and unshare")
	}
	if out, err := exec.Command(unshare, "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("no PID namespaces here: %v %s", err, out)
	}
	a := startAgent(t, t.TempDir(), []string{unshare, "--pid", "--fork", "--mount-proc", "--kill-child"})
	// unshare's child is the namespace's PID 1: deckhand's init.
	var init int
	waitFor(t, "the namespace's init", func() bool {
		kids := childrenOf(a.cmd.Process.Pid)
		if len(kids) == 1 {
			init = kids[0]
		}
		return init != 0
	})
	ns := nsPID(init)
	if ns == nsPID(os.Getpid()) {
		t.Fatal("not in a namespace of its own")
	}
	a.init = init
	checkNoZombies(t, a.client(t), func() []int { return zombiesIn(ns) })
}

// TestNoZombieChildren: the same without a namespace: the service's own
// children are all reaped (orphans go to the system's init).
func TestNoZombieChildren(t *testing.T) {
	t.Parallel()
	a := startService(t, t.TempDir())
	checkNoZombies(t, a.client(t), func() []int {
		var z []int
		for _, k := range childrenOf(a.cmd.Process.Pid) {
			if procState(k) == "Z" {
				z = append(z, k)
			}
		}
		return z
	})
}

func checkNoZombies(t *testing.T, c *deckhand.Container, zombies func() []int) {
	t.Helper()
	ctx := t.Context()
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		for _, body := range orphanMakers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw, _ := json.Marshal(body)
				var in process.RunInput
				if err := json.Unmarshal(raw, &in); err != nil {
					t.Error(err)
					return
				}
				if _, err := sdkCall[process.RunResult](ctx, c, http.MethodPost, "/api/v1/process/run", in); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	// Orphans end within a second; their reaper takes them at once.
	var z []int
	waitFor(t, "no zombies", func() bool {
		z = zombiesIn0(zombies)
		return len(z) == 0
	})
	// And none comes back: each check sees a fresh state.
	time.Sleep(300 * time.Millisecond)
	if z = zombies(); len(z) != 0 {
		t.Fatalf("zombies: %v", z)
	}
}

// zombiesIn0 waits out the instant between a child's exit and its reaping:
// a zombie seen twice 50 ms apart is one.
func zombiesIn0(zombies func() []int) []int {
	first := zombies()
	if len(first) == 0 {
		return nil
	}
	time.Sleep(50 * time.Millisecond)
	still := map[int]bool{}
	for _, z := range zombies() {
		still[z] = true
	}
	var out []int
	for _, z := range first {
		if still[z] {
			out = append(out, z)
		}
	}
	return out
}

// runCLI runs `deckhand exec args...` against agentURL.
func runCLI(t *testing.T, agentURL string, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"exec"}, args...)...)
	cmd.Env = append(cleanEnv(), "DECKHAND_AGENT_URL="+agentURL)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &so, &se, stdin
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return so.String(), se.String(), code
}

func TestExecCLI(t *testing.T) {
	t.Parallel()
	a := startAgent(t, t.TempDir(), nil)
	gw := "http://" + a.gw
	cases := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string
		stderr string
	}{
		{"exit code and streams", []string{"--", "sh", "-c", "echo out; echo err >&2; exit 7"}, "", 7, "out\n", "err\n"},
		{"flags after the command are its own", []string{"sh", "-c", "echo $0", "--tag"}, "", 0, "--tag\n", ""},
		{"timeout", []string{"--timeout", "300ms", "--", "sleep", "30"}, "", 124, "", ""},
		{"unknown program", []string{"--", "no-such-program-here"}, "", 127, "", "executable file not found"},
		{"killed by a signal", []string{"--", "sh", "-c", "kill -KILL $$"}, "", 137, "", ""},
		{"stdin passed on", []string{"-i", "--", "sh", "-c", "cat; echo end"}, "hello\n", 0, "hello\nend\n", ""},
		{"no stdin: end of file", []string{"--", "cat"}, "ignored", 0, "", ""},
		{"env and cwd", []string{"--env", "A=b", "--cwd", "/tmp", "--", "sh", "-c", "echo $A; pwd"}, "", 0, "b\n/tmp\n", ""},
		{"bad flag value", []string{"--cwd", "relative", "--", "true"}, "", 255, "", "cwd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := runCLI(t, gw, strings.NewReader(tc.stdin), tc.args...)
			if code != tc.code || out != tc.stdout || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		out, errOut, code := runCLI(t, gw, nil, "-o", "json", "--tag", "cli-json", "--", "sh", "-c", `printf 'a<b'; printf '\377' >&2; exit 2`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 2 || errOut != "" || len(lines) != 3 {
			t.Fatalf("%d %q %q", code, out, errOut)
		}
		// The two streams are two pipes: their order is the order read.
		byStream := map[string]process.Chunk{}
		for _, l := range lines[:2] {
			var c process.Chunk
			_ = json.Unmarshal([]byte(l), &c)
			byStream[c.Stream] = c
		}
		var end process.End
		_ = json.Unmarshal([]byte(lines[2]), &end)
		so, se := byStream["stdout"], byStream["stderr"]
		if so.Data != "a<b" || so.Encoding != "" || se.Encoding != "base64" || se.Data != "/w==" ||
			!(so.Offset == 0 && se.Offset == 3 || se.Offset == 0 && so.Offset == 1) ||
			end.Type != "end" || end.Process.Tag != "cli-json" || *end.Process.ExitCode != 2 {
			t.Fatalf("%q", lines)
		}
	})
	t.Run("signals are passed on", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(bin, "exec", "--", "sh", "-c", `trap 'echo got-int; exit 3' INT; echo ready; sleep 30 & wait`)
		cmd.Env = append(cleanEnv(), "DECKHAND_AGENT_URL="+gw)
		out := &platformtest.SyncBuffer{}
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ready", func() bool { return strings.Contains(out.String(), "ready") })
		_ = cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || out.String() != "ready\ngot-int\n" {
			t.Fatalf("%v %q", err, out.String())
		}
	})
}

// cutter is a TCP proxy that cuts every connection each time the bytes it
// passed towards the client cross the next mark.
type cutter struct {
	ln     net.Listener
	target string
	marks  []int64
	passed atomic.Int64
	cuts   atomic.Int32
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

func newCutter(t *testing.T, target string, marks ...int64) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, marks: marks, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { _ = ln.Close(); c.cutAll() })
	go c.accept()
	return c
}

func (c *cutter) accept() {
	for {
		down, err := c.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", c.target)
		if err != nil {
			_ = down.Close()
			continue
		}
		c.mu.Lock()
		c.conns[down], c.conns[up] = true, true
		c.mu.Unlock()
		go func() { _, _ = io.Copy(up, down); _ = up.Close(); _ = down.Close() }()
		go func() {
			buf := make([]byte, 64<<10)
			for {
				n, err := up.Read(buf)
				if n > 0 {
					if _, werr := down.Write(buf[:n]); werr != nil {
						break
					}
					total := c.passed.Add(int64(n))
					if k := int(c.cuts.Load()); k < len(c.marks) && total >= c.marks[k] {
						c.cuts.Add(1)
						c.cutAll()
						return
					}
				}
				if err != nil {
					break
				}
			}
			_ = up.Close()
			_ = down.Close()
		}()
	}
}

func (c *cutter) cutAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.conns {
		_ = conn.Close()
		delete(c.conns, conn)
	}
}

// TestExecCLIResumesAfterDrops: deckhand exec follows `cat` of a file
// through a proxy that cuts its connections three times mid-stream; what
// it prints hashes the same as the file and it exits 0.
func TestExecCLIResumesAfterDrops(t *testing.T) {
	t.Parallel()
	a := startAgent(t, t.TempDir(), nil)
	const size = 32 << 20
	path, want := writeData(t, size, false)
	cut := newCutter(t, a.gw, size/4, size/2, size*3/4)
	cmd := exec.Command(bin, "exec", "--agent", "http://"+cut.ln.Addr().String(), "--", "cat", path)
	cmd.Env = cleanEnv()
	h := sha256.New()
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = h, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want || cut.cuts.Load() != 3 || errOut.Len() != 0 {
		t.Fatalf("hash %s want %s, %d cuts, stderr %q", got, want, cut.cuts.Load(), errOut.String())
	}
}

// TestGatewayJudgesProcessAsExec: through the gateway, the process service
// is program exec of the proxy permissions.
func TestGatewayJudgesProcessAsExec(t *testing.T) {
	t.Parallel()
	doc := `{"project":"p","container":"c","enable_proxy":true,"groups":{
		"runners":{"type":"token","header":"X-Key","value":"run-key"},
		"others":{"type":"token","header":"X-Key","value":"other-key"}},
		"permissions":{"runners":{"exec":true},"others":{"services":true,"files":true,"terminal":true}}}`
	perms := filepath.Join(t.TempDir(), "perms.json")
	if err := os.WriteFile(perms, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, t.TempDir(), nil, "--permissions-file", perms)
	for key, wantStatus := range map[string]int{"run-key": 200, "other-key": 403, "": 401} {
		req, _ := http.NewRequest("POST", a.url+"/api/v1/process/run", strings.NewReader(`{"cmd":["true"]}`))
		if key != "" {
			req.Header.Set("X-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != wantStatus {
			t.Errorf("key %q: %d %s, want %d", key, resp.StatusCode, raw, wantStatus)
		}
	}
}
