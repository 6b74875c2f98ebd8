// Package e2e drives the real `deckhand` binary: it builds it, starts
// `deckhand run` on free ports with a temporary --data, and checks over HTTP
// and /proc what docs/spec/operations.md promises — services, gateway, status,
// configuration precedence, restarts, clean stops.
package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/agent"
	"deckhand/platform/platformtest"
	"deckhand/platform/proc"
)

var (
	bin        string // the deckhand binary under test
	binVersion string // what it says its version is
)

// TestMain uses $DECKHAND_BIN/deckhand when `make test` built it, else
// builds the binary into a temporary directory.
func TestMain(m *testing.M) {
	platformtest.Main(m, &bin, "deckhand", "deckhand/agent/cmd/deckhand", func(bin string) error {
		out, err := exec.Command(bin, "version").Output()
		fields := strings.Fields(string(out))
		if err != nil || len(fields) < 2 || fields[0] != "deckhand" {
			return fmt.Errorf("%s version: %v %q", bin, err, out)
		}
		binVersion = fields[1]
		return nil
	})
}

// freeBase finds a port base whose gateway port and all 16 service ports are
// free right now.
func freeBase(t testing.TB) int { return platformtest.FreePortBase(t, 16) }

type agentProc struct {
	cmd  *exec.Cmd
	gw   string // gateway host:port
	base int
	data string
	out  *platformtest.SyncBuffer
	done chan struct{}
	err  error
}

// startRaw runs `deckhand <args>` with extra environment; gw and base tell
// the helpers where it listens.
func startRaw(t testing.TB, env []string, gw string, base int, data string, args ...string) *agentProc {
	t.Helper()
	a := &agentProc{gw: gw, base: base, data: data, out: &platformtest.SyncBuffer{}, done: make(chan struct{})}
	a.cmd = exec.Command(bin, args...)
	a.cmd.Env = append(cleanEnv(), env...)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	// Its own process group, so the orphan scan can tell its descendants.
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.err = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() { a.stop(t) })
	return a
}

// cleanEnv is the test's environment without DECKHAND_* (so the precedence
// test controls them) and without a display.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DECKHAND_") || strings.HasPrefix(kv, "DISPLAY=") || strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// start runs `deckhand run` on a fresh port range and data dir, and returns
// once its gateway answers. Another test process may take a port between
// freeBase's check and the agent's bind; the agent then fails fast and a
// new range is tried.
func start(t testing.TB, extra ...string) *agentProc {
	t.Helper()
	return startEnv(t, nil, extra...)
}

// startEnv is start with extra environment for the agent.
func startEnv(t testing.TB, env []string, extra ...string) *agentProc {
	t.Helper()
attempts:
	for attempt := 0; ; attempt++ {
		base := freeBase(t)
		data := t.TempDir()
		gw := "127.0.0.1:" + strconv.Itoa(base)
		args := append([]string{"run", "--data", data, "--listen", gw, "--port-base", strconv.Itoa(base), "--log-level", "warn"}, extra...)
		a := startRaw(t, env, gw, base, data, args...)
		deadline := time.Now().Add(30 * time.Second) // hang guard
		for time.Now().Before(deadline) {
			select {
			case <-a.done:
				if attempt < 3 && strings.Contains(a.out.String(), "address already in use") {
					continue attempts
				}
				t.Fatalf("agent exited at start (%v):\n%s", a.err, a.out)
			default:
			}
			if a.status() != nil {
				return a
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("gateway never answered:\n%s", a.out)
	}
}

func (a *agentProc) stop(t testing.TB) {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		_ = proc.KillGroup(a.cmd.Process.Pid, syscall.SIGKILL)
		_ = a.cmd.Process.Kill()
		<-a.done
		t.Errorf("agent ignored SIGTERM for 10s; output:\n%s", a.out)
	}
}

var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}

// status asks the agent for its status (nil while it is not answering).
func (a *agentProc) status() *agent.Status {
	resp, err := client.Get("http://" + a.gw + "/_agent/status")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st agent.Status
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	return &st
}

// allRunning: every service answers /health; the display service may be
// up but unavailable (the tests run without an X display).
func allRunning(st *agent.Status) bool {
	if st == nil || len(st.Services) == 0 {
		return false
	}
	for _, s := range st.Services {
		up := s.State == agent.StateRunning || (s.State == agent.StateUnavailable && s.Name == "display")
		if !up || s.Health == nil {
			return false
		}
	}
	return true
}

// waitFor polls until cond holds for the agent's status. The bound is a hang
// guard, not a performance assertion.
func (a *agentProc) waitFor(t testing.TB, what string, cond func(*agent.Status) bool) *agent.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-a.done:
			t.Fatalf("agent exited (%v) while waiting for %s; output:\n%s", a.err, what, a.out)
		default:
		}
		if st := a.status(); cond(st) {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never saw %s; last status %+v; output:\n%s", what, a.status(), a.out)
	return nil
}

func (a *agentProc) ready(t testing.TB) *agent.Status {
	t.Helper()
	return a.waitFor(t, "every service running", allRunning)
}

// get fetches url and decodes a JSON object answer.
func get(t testing.TB, url string, hdr ...string) (int, map[string]any, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, raw
}

// deckhand runs a short deckhand command and returns its output and error.
func deckhand(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// procInfo reads ppid and pgid of a live process from /proc.
func procInfo(pid int) (ppid, pgid int, state string, ok bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, "", false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return 0, 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	pgid, _ = strconv.Atoi(f[2])
	return ppid, pgid, f[0], true
}

// allPIDs lists every process on the machine.
func allPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// vmRSS is a process's resident set in bytes.
func vmRSS(pid int) uint64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
