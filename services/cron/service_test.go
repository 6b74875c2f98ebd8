package cron_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/services/cron"
)

func newService(t *testing.T, deps platform.ServiceDeps, set *cron.Settings) *cron.Service {
	t.Helper()
	svc, err := cron.New(deps, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

func newHost(t *testing.T) *platform.Host {
	return platformtest.ServiceHost(t, newService(t, platformtest.ServiceDeps(t, "cron"), &cron.Settings{Runner: false}))
}

func do(t *testing.T, h *platform.Host, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req := platformtest.NewRequest(method, path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.App().Test(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	platformtest.CheckRoutesDocumented(t, newHost(t))
}

func TestBadQueryParametersAreNamed(t *testing.T) {
	t.Parallel()
	if n := platformtest.CheckQueryValidation(t, newHost(t)); n == 0 {
		t.Fatal("cron declares no query parameters to check")
	}
}

func TestHealthNamesCron(t *testing.T) {
	t.Parallel()
	var h platform.Health
	status, _ := platformtest.GetJSON(t, newHost(t), "/health", &h)
	if status != 200 || h.Service != "cron" || h.Status != "ok" || h.FDs == nil || *h.FDs <= 0 || h.Memory == nil || h.Memory.RSS == 0 {
		t.Fatalf("health %d %+v", status, h)
	}
}

// Jobs live in the service's store and its crontab file: a second service
// on the same store (a restart) lists them and writes the same crontab.
func TestJobsAreStoredAndWrittenToTheCrontab(t *testing.T) {
	t.Parallel()
	deps := platformtest.ServiceDeps(t, "cron")
	tab := filepath.Join(t.TempDir(), "etc", "crontab")
	h := platformtest.ServiceHost(t, newService(t, deps, &cron.Settings{Crontab: tab}))
	status, job := do(t, h, "POST", "/api/v1/cron/jobs", map[string]any{"name": "backup", "schedule": "5 4 * * *", "command": "tar cf /tmp/b.tar /etc"})
	if status != 201 || job["id"] != "job_1" || job["enabled"] != true || job["last_run"] != nil {
		t.Fatalf("create: %d %v", status, job)
	}
	status, _ = do(t, h, "POST", "/api/v1/cron/jobs", map[string]any{"schedule": "@hourly", "command": "true", "enabled": false})
	if status != 201 {
		t.Fatalf("second create: %d", status)
	}
	raw, err := os.ReadFile(tab)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "\n5 4 * * * tar cf /tmp/b.tar /etc\n") || !strings.Contains(string(raw), "# @hourly true  (disabled)") {
		t.Fatalf("crontab:\n%s", raw)
	}
	status, list := do(t, h, "GET", "/api/v1/cron/jobs?enabled=false", nil)
	if jobs := list["jobs"].([]any); status != 200 || len(jobs) != 1 || jobs[0].(map[string]any)["id"] != "job_2" {
		t.Fatalf("enabled=false: %d %v", status, list)
	}
	status, list = do(t, h, "GET", "/api/v1/cron/jobs?limit=1", nil)
	if jobs := list["jobs"].([]any); status != 200 || len(jobs) != 1 || list["truncated"] != true {
		t.Fatalf("limit=1: %d %v", status, list)
	}

	// Another service on the same store and settings sees the same jobs.
	h2 := platformtest.ServiceHost(t, newService(t, deps, &cron.Settings{Crontab: tab}))
	status, got := do(t, h2, "GET", "/api/v1/cron/jobs/job_1", nil)
	if status != 200 || got["name"] != "backup" {
		t.Fatalf("after restart: %d %v", status, got)
	}
	status, _ = do(t, h2, "DELETE", "/api/v1/cron/jobs/job_1", nil)
	if status != 200 {
		t.Fatalf("delete: %d", status)
	}
	if status, _ = do(t, h2, "GET", "/api/v1/cron/jobs/job_1", nil); status != 404 {
		t.Fatalf("deleted job: %d", status)
	}
	if raw, _ := os.ReadFile(tab); strings.Contains(string(raw), "tar cf") {
		t.Fatalf("deleted job still in the crontab:\n%s", raw)
	}
}

func TestBadJobsAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"schedule": "61 * * * *", "command": "true"}, "schedule"},
		{map[string]any{"schedule": "", "command": "true"}, "schedule"},
		{map[string]any{"schedule": "@hourly", "command": " "}, "command"},
		{map[string]any{"schedule": "@hourly", "command": "date +%s"}, "command"},
		{map[string]any{"schedule": "@hourly", "command": "true", "when": 1}, "when"},
	} {
		status, e := do(t, h, "POST", "/api/v1/cron/jobs", tc.body)
		if status != 400 || e["code"] != platform.CodeInvalid || e["details"] != tc.field {
			t.Errorf("%v: %d %v, want 400 naming %s", tc.body, status, e, tc.field)
		}
	}
	if status, list := do(t, h, "GET", "/api/v1/cron/jobs", nil); status != 200 || len(list["jobs"].([]any)) != 0 {
		t.Fatalf("a refused job was stored: %v", list)
	}
}

// A failing run is recorded on the job, written to the journal and sent as
// a schedule.failed notification.
func TestFailedRunReachesTheSeams(t *testing.T) {
	t.Parallel()
	rec := &platformtest.Seams{}
	deps := platformtest.ServiceDeps(t, "cron")
	deps.Journal, deps.Notifier = rec, rec
	h := platformtest.ServiceHost(t, newService(t, deps, &cron.Settings{Runner: true}))
	status, _ := do(t, h, "POST", "/api/v1/cron/jobs", map[string]any{"name": "flaky", "schedule": "@every 1s", "command": "echo broken >&2; exit 3"})
	if status != 201 {
		t.Fatalf("create: %d", status)
	}
	deadline := time.Now().Add(30 * time.Second) // a hang guard, not a timing assertion
	for {
		if len(rec.Events()) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification after the job failed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	ev, entry := rec.Events()[0], rec.Entries()[0]
	if ev.Kind != platform.EventScheduleFailed || ev.Source != "cron" || ev.Data["exit_code"] != 3 || !strings.Contains(ev.Body, "broken") {
		t.Fatalf("event %+v", ev)
	}
	if entry.Level != "error" || entry.Fields["job"] != "job_1" || entry.Fields["exit_code"] != 3 {
		t.Fatalf("journal entry %+v", entry)
	}
	status, job := do(t, h, "GET", "/api/v1/cron/jobs/job_1", nil)
	run, _ := job["last_run"].(map[string]any)
	if status != 200 || run == nil || run["exit_code"] != 3.0 || run["output"] != "broken\n" {
		t.Fatalf("job after a failed run: %d %v", status, job)
	}
}

// Close ends a run in progress instead of waiting for it, so the agent's
// stop is not held up by a long job.
func TestCloseEndsRunsInProgress(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "started")
	svc, err := cron.New(platformtest.ServiceDeps(t, "cron"), &cron.Settings{Runner: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(t.Context(), cron.CreateJob{Schedule: "@every 1s", Command: "touch " + marker + "; exec sleep 600"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- svc.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // hang guard: the run would take 600 s
		t.Fatal("Close waited for the 600 s run")
	}
}
