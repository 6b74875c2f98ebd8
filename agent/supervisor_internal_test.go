package agent

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
	"deckhand/platform/platformtest"
)

// freeBase finds a port base whose gateway port and every service port are
// free right now.
func freeBase(t *testing.T) int { return platformtest.FreePortBase(t, 14) }

// TestInProcessServiceRestartsWhileOthersServe breaks the files host's
// listener (its Serve returns) and expects the supervisor to bring files
// back with a fresh host on the same address while cron keeps answering,
// and to tell the journal and the notifier about the crash and the restart.
func TestInProcessServiceRestartsWhileOthersServe(t *testing.T) {
	base := freeBase(t)
	set := DefaultSettings()
	if err := set.Set("files-root", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	rec := &platformtest.Seams{}
	sup, err := New(Config{
		Data: t.TempDir(), Listen: "127.0.0.1:" + strconv.Itoa(base), Bind: "127.0.0.1", PortBase: base,
		Services: []string{"cron", "files"}, Settings: set, LogLevel: "error", Journal: rec, Notifier: rec,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	for _, u := range sup.units {
		<-u.ready
	}
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
			checkCrashReported(t, rec)
			return
		}
		if filesSt.Restarts > 1 {
			t.Fatalf("files restarted more than once: %+v", filesSt)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("files never came back")
}

func checkCrashReported(t *testing.T, rec *platformtest.Seams) {
	t.Helper()
	entries, events := rec.Entries(), rec.Events()
	var crashed, restarting bool
	for _, e := range entries {
		if e.Source != "agent" || e.Fields["service"] != "files" {
			t.Errorf("journal entry about something else: %+v", e)
		}
		crashed = crashed || (e.Level == "error" && strings.Contains(e.Message, "crashed") && e.Fields["error"] != "")
		restarting = restarting || (strings.Contains(e.Message, "restarting") && e.Fields["restarts"] == 1)
	}
	if !crashed || !restarting {
		t.Errorf("journal: want a crash and a restart entry for files, got %+v", entries)
	}
	if len(events) != 1 || events[0].Kind != platform.EventServiceCrashed || events[0].Data["service"] != "files" ||
		events[0].Level != "error" || events[0].Body == "" {
		t.Errorf("notifier: want one service.crashed event for files, got %+v", events)
	}
}
