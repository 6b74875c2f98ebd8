// Package e2e drives the real `deckhand service files` binary with real
// clients: litmus (WebDAV compliance), rclone (copies over WebDAV), curl-like
// 2 GiB transfers while the process's resident memory is watched.
package e2e_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

var (
	bin        string
	serviceURL = regexp.MustCompile(`"url":"(http://[0-9.:]+)"`)
)

func TestMain(m *testing.M) {
	platformtest.Main(m, &bin, "deckhand", "deckhand/agent/cmd/deckhand")
}

type proc struct {
	cmd  *exec.Cmd
	url  string
	out  *platformtest.SyncBuffer
	done chan struct{}
}

// start runs `deckhand service files` on a free port over root.
func start(t testing.TB, root string, args ...string) *proc {
	t.Helper()
	p := &proc{out: &platformtest.SyncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"service", "files", "--data", t.TempDir(), "--files-root", root,
		"--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdout, _ := p.cmd.StdoutPipe()
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.out.Write([]byte(line + "\n"))
			// {"msg":"service listening",...,"url":"http://127.0.0.1:port"}
			if m := serviceURL.FindStringSubmatch(line); m != nil && !sent && strings.Contains(line, "service listening") {
				found <- m[1]
				sent = true
			}
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
		}
		_ = p.cmd.Wait()
	})
	select {
	case p.url = <-found:
	case <-p.done:
		t.Fatalf("the service ended: %s", p.out.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("the service did not listen: %s", p.out.String())
	}
	return p
}

// startAgent runs `deckhand run --services files` on a free port base
// and returns the gateway's URL.
func startAgent(t testing.TB, root string) string {
	return startAgentUmask(t, root, "")
}

// startAgentUmask is startAgent under the given umask (octal; "" keeps
// the test's).
func startAgentUmask(t testing.TB, root, umask string) string {
	t.Helper()
	base := platformtest.FreePortBase(t, 14)
	gw := "127.0.0.1:" + strconv.Itoa(base)
	out := &platformtest.SyncBuffer{}
	args := []string{"run", "--data", t.TempDir(), "--listen", gw, "--port-base", strconv.Itoa(base),
		"--files-root", root, "--services", "files", "--log-level", "error"}
	cmd := exec.Command(bin, args...)
	if umask != "" {
		// exec keeps the pid, so the cleanup's signal reaches the agent.
		cmd = exec.Command("sh", append([]string{"-c", `umask ` + umask + ` && exec "$0" "$@"`, bin}, args...)...)
	}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	url := "http://" + gw
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url + "/_/files/api/v1/version"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
	}
	t.Fatalf("the agent did not serve files: %s", out.String())
	return ""
}

// status reads a field of /proc/<pid>/status in bytes (VmRSS, VmHWM).
func (p *proc) status(field string) uint64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func need(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s is not installed (scripts/setup.sh installs it)", tool)
	}
}
