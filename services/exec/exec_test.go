package exec_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/exec"
)

type fixture struct {
	svc   *exec.Service
	h     *platform.Host
	seams *platformtest.Seams
	file  string
	deps  contract.ServiceDeps
}

// newFixture is an exec service whose schedules file holds content (none
// when empty), on clock (the system's when nil).
func newFixture(t *testing.T, content string, clock clockpkg.Clock) *fixture {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "exec")
	seams := &platformtest.Seams{}
	deps.Journal, deps.Notifier = seams, seams
	if clock != nil {
		deps.Clock = clock
	}
	file := filepath.Join(deps.DataDir, "schedules.yaml")
	if content != "" {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := exec.New(deps, &exec.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return &fixture{svc: svc, h: platformtest.ServiceHost(t, svc), seams: seams, file: file, deps: deps}
}

func (f *fixture) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	code, m, _ := platformtest.Call(t, f.h, method, path, body)
	return code, m
}

// waitRuns polls the history until cond holds for the runs of name.
func (f *fixture) waitRuns(t *testing.T, name string, within time.Duration, cond func([]exec.Run) bool) []exec.Run {
	t.Helper()
	end := time.Now().Add(within)
	for {
		runs, err := historyOf(f.svc, exec.HistoryFilter{Schedule: name, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if cond(runs) {
			return runs
		}
		if time.Now().After(end) {
			t.Fatalf("history of %s after %s: %+v", name, within, runs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func finished(n int) func([]exec.Run) bool {
	return func(runs []exec.Run) bool {
		done := 0
		for _, r := range runs {
			if r.Status != exec.StatusRunning && r.Status != exec.StatusQueued {
				done++
			}
		}
		return done >= n
	}
}

func TestScheduleRunsOnTimeOnAFakeClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 500e6, time.UTC)
	clock := clockpkg.NewFakeClock(start)
	f := newFixture(t, "schedules:\n  - name: tick\n    schedule: '*/10 * * * * *'\n    command: echo ran\n", clock)
	due := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	l := mustList(t, f.svc)
	if len(l.Schedules) != 1 || l.Schedules[0].NextRun == nil || !l.Schedules[0].NextRun.Equal(due) {
		t.Fatalf("list %+v, want next run %s", l, due)
	}
	// Just before the due time nothing runs.
	clock.Set(due.Add(-time.Millisecond))
	f.svc.Kick()
	time.Sleep(100 * time.Millisecond)
	if runs, _ := historyOf(f.svc, exec.HistoryFilter{Limit: 10}); len(runs) != 0 {
		t.Fatalf("ran early: %+v", runs)
	}
	clock.Set(due)
	f.svc.Kick()
	runs := f.waitRuns(t, "tick", 10*time.Second, finished(1))
	r := runs[0]
	if r.Trigger != "schedule" || r.ScheduledAt == nil || !r.ScheduledAt.Equal(due) || !r.StartedAt.Equal(due) ||
		r.Status != exec.StatusSucceeded || r.Stdout != "ran\n" || *r.ExitCode != 0 {
		t.Fatalf("run %+v", r)
	}
	if next := mustList(t, f.svc).Schedules[0].NextRun; !next.Equal(due.Add(10 * time.Second)) {
		t.Fatalf("next run %s", next)
	}
	// A jump over several due times runs once, then goes on from now.
	clock.Set(due.Add(35 * time.Second))
	f.svc.Kick()
	f.waitRuns(t, "tick", 10*time.Second, finished(2))
	time.Sleep(100 * time.Millisecond)
	if runs, _ := historyOf(f.svc, exec.HistoryFilter{Limit: 10}); len(runs) != 2 {
		t.Fatalf("%d runs after a jump, want 2", len(runs))
	}
	if next := mustList(t, f.svc).Schedules[0].NextRun; !next.Equal(due.Add(40 * time.Second)) {
		t.Fatalf("next run after the jump %s", next)
	}
}

func TestScheduleRunsEverySecondOnTheWallClock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "schedules:\n  - name: sec\n    schedule: '* * * * * *'\n    command: date +%s.%N\n", nil)
	runs := f.waitRuns(t, "sec", 10*time.Second, finished(2))
	for _, r := range runs {
		at, err := strconv.ParseFloat(strings.TrimSpace(r.Stdout), 64)
		if err != nil || r.ScheduledAt == nil || r.ScheduledAt.Nanosecond() != 0 {
			t.Fatalf("run %+v", r)
		}
		ran := time.Unix(0, int64(at*1e9))
		// Not before its due time, and before the next one came due.
		if ran.Before(*r.ScheduledAt) || ran.After(r.ScheduledAt.Add(time.Second)) {
			t.Fatalf("due %s, ran %s", r.ScheduledAt, ran)
		}
	}
}

func TestTimeoutKillsTheRunAndKeepsItsOutput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "schedules:\n  - name: slow\n    schedule: '@yearly'\n    timeout: 300ms\n"+
		"    command: 'echo $$; echo partial; echo oops >&2; sleep 60 & sleep 61'\n", nil)
	code, m := f.call(t, "POST", "/api/v1/exec/schedules/trigger", map[string]any{"name": "slow"})
	if code != 202 || m["status"] != "running" || m["trigger"] != "manual" {
		t.Fatalf("trigger: %d %v", code, m)
	}
	r := f.waitRuns(t, "slow", 20*time.Second, finished(1))[0]
	if r.Status != exec.StatusTimedOut || r.ExitCode == nil || *r.ExitCode != 128+15 || r.Stderr != "oops\n" ||
		!strings.HasSuffix(r.Stdout, "\npartial\n") || r.DurationSeconds < 0.3 {
		t.Fatalf("run %+v", r)
	}
	pid, _ := strconv.Atoi(strings.SplitN(r.Stdout, "\n", 2)[0])
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if !strings.Contains(string(raw), ") Z") {
			t.Fatalf("the timed-out shell %d is alive: %s", pid, raw)
		}
	}
	// The event follows the record.
	end := time.Now().Add(10 * time.Second)
	for failed := false; !failed; {
		for _, ev := range f.seams.Events() {
			failed = failed || (ev.Kind == contract.EventScheduleFailed && ev.Data["status"] == exec.StatusTimedOut)
		}
		if !failed && time.Now().After(end) {
			t.Fatalf("no schedule.failed event: %+v", f.seams.Events())
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, m = f.call(t, "GET", "/api/v1/exec/schedules/history?status=timed_out&name=slow&limit=1", nil)
	if code != 200 || len(m["runs"].([]any)) != 1 {
		t.Fatalf("history: %d %v", code, m)
	}
}

func TestOverlapPolicies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "schedules:\n"+
		"  - {name: skip, schedule: '@yearly', command: 'sleep 0.5'}\n"+
		"  - {name: queue, schedule: '@yearly', command: 'sleep 0.3', overlap: queue}\n"+
		"  - {name: allow, schedule: '@yearly', command: 'sleep 0.3', overlap: allow}\n", nil)
	for _, name := range []string{"skip", "queue", "allow"} {
		for i := 0; i < 2; i++ {
			if _, err := f.svc.Trigger(context.Background(), exec.TriggerRequest{Name: name}); err != nil {
				t.Fatal(err)
			}
		}
	}
	statuses := func(name string) string {
		runs := f.waitRuns(t, name, 20*time.Second, finished(2))
		var s []string
		for i := len(runs) - 1; i >= 0; i-- {
			s = append(s, runs[i].Status)
		}
		return strings.Join(s, ",")
	}
	if got := statuses("skip"); got != "succeeded,skipped" {
		t.Fatalf("skip: %s", got)
	}
	if got := statuses("allow"); got != "succeeded,succeeded" {
		t.Fatalf("allow: %s", got)
	}
	runs := f.waitRuns(t, "queue", 20*time.Second, finished(2))
	if runs[0].Status != exec.StatusSucceeded || runs[1].Status != exec.StatusSucceeded || runs[0].StartedAt.Before(*runs[1].EndedAt) {
		t.Fatalf("queue: the second run must start after the first ended: %+v", runs)
	}
}

func TestReloadRefusesABadFileWhole(t *testing.T) {
	t.Parallel()
	good := "schedules:\n  - {name: a, schedule: '@hourly', command: 'true'}\n"
	f := newFixture(t, good, nil)
	before := mustList(t, f.svc)
	cases := []struct{ content, details, has string }{
		{"schedules:\n  - {name: a, schedule: '@hourly', command: 'true'}\n  - {name: b, schedule: '@hourly', command: x, timeout: soon}\n", "schedules[1].timeout", "duration"},
		{"schedules:\n  - {name: a, schedule: 'every day', command: 'true'}\n", "schedules[0].schedule", "schedules[0].schedule:"},
		{"schedules:\n  - {name: a, schedule: '@hourly', command: ''}\n", "schedules[0].command", "required"},
		{"schedules:\n  - {name: a, schedule: '@hourly', command: x, overlap: never}\n", "schedules[0].overlap", "skip, queue or allow"},
		{"schedules:\n  - {name: a, schedule: '@hourly', command: x}\n  - {name: a, schedule: '@daily', command: y}\n", "schedules[1].name", "also the name of schedules[0]"},
		{"schedules:\n  - {name: 'b c', schedule: '@hourly', command: x}\n", "schedules[0].name", "letters"},
		{"schedules:\n  - {name: a, schedule: '@hourly', command: x, timezone: Mars/Base}\n", "schedules[0].timezone", "unknown"},
		{"schedules:\n  - {name: a, schedule: '@hourly', command: x, bogus: 1}\n", "file", "field bogus not found"},
		{"schedules: [\n", "file", "schedules.yaml"},
	}
	for _, tc := range cases {
		if err := os.WriteFile(f.file, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		code, m := f.call(t, "POST", "/api/v1/exec/schedules/reload", nil)
		msg, _ := m["message"].(string)
		if code != 400 || m["code"] != "INVALID" || m["details"] != tc.details || !strings.Contains(msg, tc.has) {
			t.Errorf("%q: %d %v, want 400 naming %s", tc.content, code, m, tc.details)
		}
		if after := mustList(t, f.svc); len(after.Schedules) != 1 || !after.Schedules[0].NextRun.Equal(*before.Schedules[0].NextRun) ||
			after.Schedules[0].Cron != "@hourly" {
			t.Fatalf("a refused reload changed the schedules: %+v", after)
		}
	}
	if err := os.WriteFile(f.file, []byte("schedules:\n  - {name: b, schedule: '*/5 * * * *', command: 'true'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, m := f.call(t, "POST", "/api/v1/exec/schedules/reload", nil)
	if code != 200 || m["schedules"].(float64) != 1 || m["added"].([]any)[0] != "b" || m["removed"].([]any)[0] != "a" {
		t.Fatalf("good reload: %d %v", code, m)
	}
	if code, m := f.call(t, "POST", "/api/v1/exec/schedules/trigger", map[string]any{"name": "a"}); code != 404 {
		t.Fatalf("trigger a removed schedule: %d %v", code, m)
	}
	if code, m := f.call(t, "POST", "/api/v1/exec/schedules/trigger", map[string]any{}); code != 400 || m["details"] != "name" {
		t.Fatalf("trigger without a name: %d %v", code, m)
	}
}

func TestBadFileAtStartLeavesNoSchedulesAndSaysWhy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "schedules:\n  - {name: a, schedule: '61 * * * *', command: x}\n", nil)
	code, m := f.call(t, "GET", "/api/v1/exec/schedules/list", nil)
	if code != 200 || len(m["schedules"].([]any)) != 0 || !strings.Contains(m["load_error"].(string), "schedules[0].schedule") {
		t.Fatalf("list: %d %v", code, m)
	}
}

func TestHistoryFiltersAndSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "schedules:\n  - {name: ok, schedule: '@yearly', command: 'true'}\n  - {name: bad, schedule: '@yearly', command: 'exit 4'}\n", nil)
	for i := 0; i < 3; i++ {
		_, _ = f.svc.Trigger(context.Background(), exec.TriggerRequest{Name: "ok"})
		_, _ = f.svc.Trigger(context.Background(), exec.TriggerRequest{Name: "bad"})
		f.waitRuns(t, "", 10*time.Second, finished(2*(i+1)))
	}
	code, m := f.call(t, "GET", "/api/v1/exec/schedules/history?status=failed&limit=2", nil)
	runs, _ := m["runs"].([]any)
	if code != 200 || len(runs) != 2 || runs[0].(map[string]any)["exit_code"].(float64) != 4 {
		t.Fatalf("history: %d %v", code, m)
	}
	code, m = f.call(t, "GET", "/api/v1/exec/schedules/history?since=2999-01-01T00:00:00Z", nil)
	if code != 200 || len(m["runs"].([]any)) != 0 {
		t.Fatalf("since: %d %v", code, m)
	}
	code, m = f.call(t, "GET", "/api/v1/exec/schedules/history?until=yesterday", nil)
	if code != 400 || m["details"] != "until" {
		t.Fatalf("bad until: %d %v", code, m)
	}
	l := mustList(t, f.svc)
	if l.Schedules[0].Name != "bad" || l.Schedules[0].LastRun == nil || l.Schedules[0].LastRun.Status != exec.StatusFailed {
		t.Fatalf("list: %+v", l.Schedules[0])
	}
	// A run the service stops during is interrupted; the history is
	// there after a restart on the same store.
	if err := os.WriteFile(f.file, []byte("schedules:\n  - {name: long, schedule: '@yearly', command: 'sleep 60'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Trigger(context.Background(), exec.TriggerRequest{Name: "long"}); err != nil {
		t.Fatal(err)
	}
	_ = f.svc.Close()
	again, err := exec.New(f.deps, &exec.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	all, _ := historyOf(again, exec.HistoryFilter{Limit: 100})
	if len(all) != 7 || all[0].Schedule != "long" || all[0].Status != exec.StatusInterrupted || all[0].EndedAt == nil {
		t.Fatalf("after restart: %d runs, newest %+v", len(all), all[0])
	}
}

func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", nil)
	platformtest.CheckRoutesDocumented(t, f.h)
	if n := platformtest.CheckQueryValidation(t, f.h); n == 0 {
		t.Fatal("no query parameter checked")
	}
}

func mustList(t *testing.T, svc *exec.Service) exec.List {
	t.Helper()
	l, err := svc.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func historyOf(svc *exec.Service, f exec.HistoryFilter) ([]exec.Run, error) {
	h, err := svc.History(context.Background(), f)
	return h.Runs, err
}
