package agent

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// freeBase finds a port base whose gateway port and every service port are
// free right now.
func freeBase(t *testing.T) int { return platformtest.FreePortBase(t, 14) }

// runSupervisor runs cfg on a free port range with a temporary --data,
// quiet logs and --domain localhost, until the test ends, and returns once
// every unit has started.
func runSupervisor(t *testing.T, cfg Config) *Supervisor {
	t.Helper()
	base := freeBase(t)
	cfg.Data, cfg.Listen, cfg.Bind, cfg.PortBase = t.TempDir(), "127.0.0.1:"+strconv.Itoa(base), "127.0.0.1", base
	cfg.Domain, cfg.LogLevel = "localhost", "error"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	for _, u := range sup.units {
		<-u.ready
	}
	return sup
}

// TestInProcessServiceRestartsWhileOthersServe breaks the files host's
// listener (its Serve returns) and expects the supervisor to bring files
// back with a fresh host on the same address while cron keeps answering.
func TestInProcessServiceRestartsWhileOthersServe(t *testing.T) {
	sup := runSupervisor(t, Config{Services: []string{"cron", "files"}})
	files := sup.units[1]
	files.mu.Lock()
	ln := files.cur
	files.mu.Unlock()
	_ = ln.Close()

	deadline := time.Now().Add(30 * time.Second) // a hang guard, not a performance bound
	for time.Now().Before(deadline) {
		st := sup.Status(context.Background())
		cronSt, filesSt := st.Services[0], st.Services[1]
		if cronSt.State != StateRunning || cronSt.Health == nil {
			t.Fatalf("cron stopped serving while files restarted: %+v", cronSt)
		}
		if filesSt.Restarts == 1 && filesSt.State == StateRunning && filesSt.Health != nil && filesSt.Health.Service == "files" {
			if filesSt.LastError == "" {
				t.Fatalf("restart without a recorded reason: %+v", filesSt)
			}
			return
		}
		if filesSt.Restarts > 1 {
			t.Fatalf("files restarted more than once: %+v", filesSt)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("files never came back")
}
