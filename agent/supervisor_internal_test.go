package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
)

// freeBase finds a port base whose gateway port and every service port are
// free right now.
func freeBase(t *testing.T) int { return platformtest.FreePortBase(t, 14) }

// runSupervisor runs cfg on a free port range with a temporary --data,
// quiet logs and the default settings (--domain localhost) unless cfg
// brings its own, until the test ends, and returns once every unit has
// started.
func runSupervisor(t *testing.T, cfg Config) *Supervisor {
	t.Helper()
	sup := startSupervisor(t, cfg, nil)
	for _, u := range sup.units {
		<-u.ready
	}
	return sup
}

// startSupervisor makes a supervisor of cfg on free ports, lets prepare
// (when given) change it, and runs it until the test ends, without
// waiting for its services.
func startSupervisor(t *testing.T, cfg Config, prepare func(*Supervisor)) *Supervisor {
	t.Helper()
	base := freeBase(t)
	cfg.Data, cfg.Listen, cfg.Bind, cfg.PortBase = t.TempDir(), "127.0.0.1:"+strconv.Itoa(base), "127.0.0.1", base
	cfg.LogLevel = "error"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(sup)
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
	return sup
}

// TestInProcessServiceRestartsWhileOthersServe breaks the files host's
// listener (its Serve returns) and expects the supervisor to bring files
// back with a fresh host on the same address while cron keeps answering,
// and to tell the journal and the notifier about the crash and the restart.
func TestInProcessServiceRestartsWhileOthersServe(t *testing.T) {
	set := DefaultSettings()
	if err := set.Set("files-root", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	rec := &platformtest.Seams{}
	sup := runSupervisor(t, Config{Services: []string{"cron", "files"}, Settings: set, Journal: rec, Notifier: rec})
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
	if len(events) != 1 || events[0].Kind != contract.EventServiceCrashed || events[0].Data["service"] != "files" ||
		events[0].Level != "error" || events[0].Body == "" {
		t.Errorf("notifier: want one service.crashed event for files, got %+v", events)
	}
}

// TestGatewayDispatchFollowsTheServingHost: the gateway has an in-process
// service's handler while its host serves (gateway tests show the call
// needs no connection to the port), and after the host crashes and
// restarts it has the new host's; so do the peers another service's
// tool calls look the host up in.
func TestGatewayDispatchFollowsTheServingHost(t *testing.T) {
	set := DefaultSettings()
	if err := set.Set("files-root", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	sup := runSupervisor(t, Config{Services: []string{"files"}, Settings: set})
	url := "http://" + sup.GatewayAddr() + "/_/files/api/v1/version"
	get := func() int {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	first := sup.inProcess("files")
	if first == nil {
		t.Fatal("an in-process service is not dispatched directly")
	}
	firstHost := sup.peers.Host("files")
	if firstHost == nil {
		t.Fatal("an in-process service's host is not among the peers")
	}
	if st := get(); st != http.StatusOK {
		t.Fatalf("through the gateway: %d", st)
	}
	files := sup.units[0]
	files.mu.Lock()
	ln := files.cur
	files.mu.Unlock()
	_ = ln.Close()                               // the host's Serve returns: a crash
	deadline := time.Now().Add(30 * time.Second) // a hang guard, not a performance bound
	for time.Now().Before(deadline) {
		if cur := sup.inProcess("files"); cur != nil && cur != first {
			if st := get(); st != http.StatusOK {
				t.Fatalf("after the restart: %d", st)
			}
			if h := sup.peers.Host("files"); h == nil || h == firstHost {
				t.Fatalf("after the restart the peers have %p, the crashed host %p", h, firstHost)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the gateway never dispatched to the restarted host")
}
