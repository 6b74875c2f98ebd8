package hoste2e

import (
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// TestSocketActivation: given a socket the way systemd passes one
// (systemd-socket-activate sets LISTEN_FDS and LISTEN_PID), each binary
// serves on it; its --listen names a port that is taken, so a fallback to
// --listen would fail to start.
func TestSocketActivation(t *testing.T) {
	t.Parallel()
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Fatal("systemd-socket-activate is missing (the systemd package; scripts/setup.sh)")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, c := range []struct {
		name, health string
		args         func(port int) []string
	}{
		{"control", "/health", func(int) []string {
			return []string{controlBin, "serve", "--listen", taken.Addr().String(), "--data", t.TempDir(), "--log-level", "warn"}
		}},
		{"agent", "/_/cron/health", func(port int) []string {
			return []string{agentBin, "run", "--listen", taken.Addr().String(), "--data", t.TempDir(), "--port-base", strconv.Itoa(port + 1),
				"--services", "cron", "--log-level", "warn"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := platformtest.FreePortBase(t, 4)
			addr := "127.0.0.1:" + strconv.Itoa(base)
			cmd := exec.Command(activate, append([]string{"--listen=" + addr}, c.args(base)...)...)
			var logs platformtest.SyncBuffer
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			deadline := time.Now().Add(30 * time.Second) // hang guard
			for {
				resp, err := http.Get("http://" + addr + c.health)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no answer on the activated socket %s: %v\n%s", addr, err, logs.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
