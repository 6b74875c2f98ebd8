package daemon_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// startAgentDaemon runs `deckhand service daemon` on data and answers its
// base URL and process.
func startAgentDaemon(t *testing.T, bin, data string) (string, *exec.Cmd) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	cmd := exec.Command(bin, "service", "daemon", "--data", data, "--listen", addr, "--log-level", "error")
	log := &platformtest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	end := time.Now().Add(30 * time.Second)
	for time.Now().Before(end) {
		if resp, err := http.Get(url + "/health"); err == nil {
			resp.Body.Close()
			return url, cmd
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("deckhand service daemon did not answer on %s: %s", addr, log.String())
	return "", nil
}

// runningPID polls the program's status over HTTP until it runs.
func runningPID(t *testing.T, url, id string) int {
	t.Helper()
	end := time.Now().Add(15 * time.Second)
	for time.Now().Before(end) {
		resp, err := http.Get(url + "/api/v1/daemon/programs/" + id)
		if err == nil {
			var v struct {
				Status struct {
					State string `json:"state"`
					PID   int    `json:"pid"`
				} `json:"status"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if v.Status.State == "running" {
				return v.Status.PID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never ran", id)
	return 0
}

// TestProgramsDieWithTheAgentAndComeBackWithIt drives the real binary: a
// program from a file autostarts; SIGKILL of the agent leaves no program
// behind (Pdeathsig); a new agent on the same data starts it again.
func TestProgramsDieWithTheAgentAndComeBackWithIt(t *testing.T) {
	t.Parallel()
	bin, cleanup, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	data := t.TempDir()
	dir := filepath.Join(data, "daemon", "programs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	def := `{"command": "/bin/sleep", "args": ["300"], "start_seconds": 0.1}`
	if err := os.WriteFile(filepath.Join(dir, "sleeper.json"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	url, agent := startAgentDaemon(t, bin, data)
	pid := runningPID(t, url, "sleeper")
	if err := agent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait()
	end := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(end) {
			t.Fatalf("program %d outlived the killed agent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	url, _ = startAgentDaemon(t, bin, data)
	if again := runningPID(t, url, "sleeper"); again == pid {
		t.Fatalf("same pid %d after a restart", pid)
	}
}
