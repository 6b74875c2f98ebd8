package cron_test

import (
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/cron"
)

// waitFor polls cond; the deadline is a hang guard, not a timing assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeClockDeps are a service's deps on a fake clock at 2026-01-01 10:00:30 UTC.
func fakeClockDeps(t *testing.T) (contract.ServiceDeps, *clockpkg.FakeClock) {
	deps := platformtest.ServiceDeps(t, "cron")
	clock := clockpkg.NewFakeClock(time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC))
	deps.Clock = clock
	return deps, clock
}

func writeTab(t *testing.T, content string) string {
	t.Helper()
	tab := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(tab, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return tab
}

// runsOf lists the runs of one entry (all runs when entry is ""), oldest first.
func runsOf(t *testing.T, h *platform.Host, entry string) []map[string]any {
	t.Helper()
	path := "/api/v1/cron/runs?limit=1000"
	if entry != "" {
		path += "&entry=" + entry
	}
	a := call(t, h, "GET", path, nil)
	if a.status != 200 {
		t.Fatalf("runs: %d %s", a.status, a.raw)
	}
	var out []map[string]any
	for _, r := range a.m["runs"].([]any) {
		out = append([]map[string]any{r.(map[string]any)}, out...)
	}
	return out
}

func finished(rs []map[string]any) bool {
	for _, r := range rs {
		if r["status"] == "running" || r["status"] == "queued" {
			return false
		}
	}
	return true
}

func idByCommand(t *testing.T, h *platform.Host, command string) string {
	t.Helper()
	for _, e := range entries(t, h) {
		if e["command"] == command {
			return e["id"].(string)
		}
	}
	t.Fatalf("no entry runs %q", command)
	return ""
}

// The built-in runner fires an entry at its time on the service's clock,
// with the crontab's variables, and not before.
func TestRunnerFiresOnTime(t *testing.T) {
	t.Parallel()
	deps, clock := fakeClockDeps(t)
	tab := writeTab(t, "GREETING=hello\nCRON_TZ=UTC\n* * * * * echo $GREETING at minute\n")
	h := platformtest.ServiceHost(t, newService(t, deps, &cron.Settings{Crontab: tab, Runner: true}))
	time.Sleep(1500 * time.Millisecond) // the loop ticks at least every second
	if rs := runsOf(t, h, ""); len(rs) != 0 {
		t.Fatalf("ran before its time: %v", rs)
	}
	clock.Set(time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC))
	waitFor(t, "the 10:01 run", func() bool { rs := runsOf(t, h, ""); return len(rs) == 1 && finished(rs) })
	r := runsOf(t, h, "")[0]
	if r["scheduled_at"] != "2026-01-01T10:01:00Z" || r["trigger"] != "schedule" || r["status"] != "succeeded" ||
		r["exit_code"] != 0.0 || r["output"] != "hello at minute\n" || r["ended_at"] == nil {
		t.Fatalf("run %v", r)
	}
	clock.Set(time.Date(2026, 1, 1, 10, 1, 59, 0, time.UTC))
	time.Sleep(1500 * time.Millisecond)
	if rs := runsOf(t, h, ""); len(rs) != 1 {
		t.Fatalf("fired twice in one minute: %v", rs)
	}
	clock.Set(time.Date(2026, 1, 1, 10, 2, 0, 0, time.UTC))
	waitFor(t, "the 10:02 run", func() bool { return len(runsOf(t, h, "")) == 2 })
}

// After downtime the missed times are dropped (none), run once (last) or
// all replayed (all), by each entry's policy.
func TestCatchupPolicies(t *testing.T) {
	t.Parallel()
	deps, clock := fakeClockDeps(t)
	tab := writeTab(t, "CRON_TZ=UTC\n0 * * * * echo none\n0 * * * * echo last\n0 * * * * echo all\n")
	set := &cron.Settings{Crontab: tab, Runner: true}
	first := newService(t, deps, set)
	h := platformtest.ServiceHost(t, first)
	ids := map[string]string{}
	for _, p := range []string{"none", "last", "all"} {
		ids[p] = idByCommand(t, h, "echo "+p)
		if a := call(t, h, "PATCH", "/api/v1/cron/entries/"+ids[p], map[string]any{"catchup": p}); a.status != 200 || a.m["catchup"] != p {
			t.Fatalf("set catchup %s: %d %s", p, a.status, a.raw)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// Down from 10:00:30 to 13:30:30: 11:00, 12:00 and 13:00 were missed.
	clock.Set(time.Date(2026, 1, 1, 13, 30, 30, 0, time.UTC))
	h = platformtest.ServiceHost(t, newService(t, deps, set))
	waitFor(t, "catch-up runs", func() bool {
		all, last := runsOf(t, h, ids["all"]), runsOf(t, h, ids["last"])
		return len(all) == 3 && len(last) == 1 && finished(all) && finished(last)
	})
	var got []string
	for _, r := range runsOf(t, h, ids["all"]) {
		if r["trigger"] != "catchup" || r["status"] != "succeeded" || r["output"] != "all\n" {
			t.Fatalf("all: %v", r)
		}
		got = append(got, r["scheduled_at"].(string))
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "2026-01-01T11:00:00Z,2026-01-01T12:00:00Z,2026-01-01T13:00:00Z" {
		t.Fatalf("all replayed %v", got)
	}
	if r := runsOf(t, h, ids["last"])[0]; r["scheduled_at"] != "2026-01-01T13:00:00Z" || r["trigger"] != "catchup" {
		t.Fatalf("last: %v", r)
	}
	// The runs were all started in the tick that found them missed.
	if rs := runsOf(t, h, ids["none"]); len(rs) != 0 {
		t.Fatalf("none ran: %v", rs)
	}
}

// A run due while the previous one still runs is skipped, queued or
// started beside it, by the entry's overlap policy.
func TestOverlapPolicies(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "release")
	wait := "while [ ! -e " + release + " ]; do sleep 0.02; done; echo "
	tab := writeTab(t, "@yearly "+wait+"skip\n@yearly "+wait+"queue\n@yearly "+wait+"allow\n")
	h := platformtest.ServiceHost(t, newService(t, platformtest.ServiceDeps(t, "cron"), &cron.Settings{Crontab: tab}))
	ids := map[string]string{}
	for _, p := range []string{"skip", "queue", "allow"} {
		ids[p] = idByCommand(t, h, wait+p)
		if a := call(t, h, "PATCH", "/api/v1/cron/entries/"+ids[p], map[string]any{"overlap": p}); a.status != 200 {
			t.Fatalf("set overlap %s: %d %s", p, a.status, a.raw)
		}
		one := call(t, h, "POST", "/api/v1/cron/entries/"+ids[p]+"/run", nil)
		two := call(t, h, "POST", "/api/v1/cron/entries/"+ids[p]+"/run", nil)
		want := map[string]string{"skip": "skipped", "queue": "queued", "allow": "running"}[p]
		if one.status != 202 || one.m["status"] != "running" || one.m["trigger"] != "manual" || two.status != 202 || two.m["status"] != want {
			t.Fatalf("%s: first %d %s, second %d %s", p, one.status, one.raw, two.status, two.raw)
		}
	}
	// While held, queue has one running and one waiting; allow has two running.
	if rs := runsOf(t, h, ids["allow"]); rs[0]["status"] != "running" || rs[1]["status"] != "running" {
		t.Fatalf("allow: %v", rs)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every run to end", func() bool { return finished(runsOf(t, h, "")) })
	skip, queue, allow := runsOf(t, h, ids["skip"]), runsOf(t, h, ids["queue"]), runsOf(t, h, ids["allow"])
	if skip[0]["status"] != "succeeded" || skip[1]["status"] != "skipped" || skip[1]["exit_code"] != nil {
		t.Fatalf("skip: %v", skip)
	}
	at := func(r map[string]any, k string) time.Time {
		tm, _ := time.Parse(time.RFC3339Nano, r[k].(string))
		return tm
	}
	if queue[0]["status"] != "succeeded" || queue[1]["status"] != "succeeded" || at(queue[1], "started_at").Before(at(queue[0], "ended_at")) {
		t.Fatalf("queue: the second run did not wait for the first: %v", queue)
	}
	if allow[0]["status"] != "succeeded" || allow[1]["status"] != "succeeded" || !at(allow[1], "started_at").Before(at(allow[0], "ended_at")) {
		t.Fatalf("allow: the runs did not overlap: %v", allow)
	}
}

// Run records live in the store: a restarted service lists them, and a
// run the service stopped during is recorded as interrupted.
func TestRunsAreKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	deps := platformtest.ServiceDeps(t, "cron")
	tab := writeTab(t, "@daily echo kept\n@daily exec sleep 600\n")
	set := &cron.Settings{Crontab: tab}
	first := newService(t, deps, set)
	h := platformtest.ServiceHost(t, first)
	kept, sleeper := idByCommand(t, h, "echo kept"), idByCommand(t, h, "exec sleep 600")
	if a := call(t, h, "POST", "/api/v1/cron/entries/"+kept+"/run", nil); a.status != 202 {
		t.Fatalf("run: %d %s", a.status, a.raw)
	}
	waitFor(t, "the run", func() bool { rs := runsOf(t, h, kept); return len(rs) == 1 && finished(rs) })
	if a := call(t, h, "POST", "/api/v1/cron/entries/"+sleeper+"/run", nil); a.status != 202 {
		t.Fatalf("run: %d %s", a.status, a.raw)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	h = platformtest.ServiceHost(t, newService(t, deps, set))
	rs := runsOf(t, h, "")
	if len(rs) != 2 || rs[0]["entry_id"] != kept || rs[0]["status"] != "succeeded" || rs[0]["output"] != "kept\n" ||
		rs[1]["entry_id"] != sleeper || rs[1]["status"] != "interrupted" {
		t.Fatalf("runs after restart: %v", rs)
	}
	if a := call(t, h, "GET", "/api/v1/cron/runs?limit=1", nil); len(a.m["runs"].([]any)) != 1 || a.m["truncated"] != true {
		t.Fatalf("limit=1: %s", a.raw)
	}
}

// A run gets cron's environment: its variables, SHELL, LOGNAME, HOME as
// the working directory, and % as stdin lines.
func TestRunUsesTheScheduledEnvironment(t *testing.T) {
	t.Parallel()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	tab := writeTab(t, "FOO=\"bar baz\"\nSHELL=/bin/bash\n@daily echo \"$FOO $SHELL $LOGNAME $(pwd) \\%\"; cat%line1%line2\n")
	h := platformtest.ServiceHost(t, newService(t, platformtest.ServiceDeps(t, "cron"), &cron.Settings{Crontab: tab}))
	id := entries(t, h)[0]["id"].(string)
	if a := call(t, h, "POST", "/api/v1/cron/entries/"+id+"/run", nil); a.status != 202 {
		t.Fatalf("run: %d %s", a.status, a.raw)
	}
	waitFor(t, "the run", func() bool { rs := runsOf(t, h, id); return len(rs) == 1 && finished(rs) })
	want := "bar baz /bin/bash " + me.Username + " " + me.HomeDir + " %\nline1\nline2\n"
	if r := runsOf(t, h, id)[0]; r["output"] != want {
		t.Fatalf("output %q, want %q", r["output"], want)
	}
}

// A failing run is recorded, written to the journal and sent as a
// schedule.failed notification.
func TestFailedRunReachesTheSeams(t *testing.T) {
	t.Parallel()
	rec := &platformtest.Seams{}
	deps := platformtest.ServiceDeps(t, "cron")
	deps.Journal, deps.Notifier = rec, rec
	tab := writeTab(t, "@hourly echo broken >&2; exit 3\n")
	h := platformtest.ServiceHost(t, newService(t, deps, &cron.Settings{Crontab: tab}))
	id := entries(t, h)[0]["id"].(string)
	call(t, h, "POST", "/api/v1/cron/entries/"+id+"/run", nil)
	waitFor(t, "the notification", func() bool { return len(rec.Events()) > 0 })
	ev, entry := rec.Events()[0], rec.Entries()[0]
	if ev.Kind != contract.EventScheduleFailed || ev.Source != "cron" || ev.Data["exit_code"] != 3 || !strings.Contains(ev.Body, "broken") {
		t.Fatalf("event %+v", ev)
	}
	if entry.Level != "error" || entry.Fields["entry"] != id || entry.Fields["exit_code"] != 3 {
		t.Fatalf("journal entry %+v", entry)
	}
	if r := runsOf(t, h, id)[0]; r["status"] != "failed" || r["exit_code"] != 3.0 || r["output"] != "broken\n" {
		t.Fatalf("run %v", r)
	}
}

// The runner re-reads the crontab when the file changes on disk.
func TestRunnerReloadsAChangedFile(t *testing.T) {
	t.Parallel()
	deps, clock := fakeClockDeps(t)
	tab := writeTab(t, "# nothing yet\n")
	h := platformtest.ServiceHost(t, newService(t, deps, &cron.Settings{Crontab: tab, Runner: true}))
	if err := os.WriteFile(tab, []byte("# nothing yet\n* * * * * echo edited by hand\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a run of the new entry", func() bool {
		clock.Advance(20 * time.Second)
		time.Sleep(1100 * time.Millisecond)
		rs := runsOf(t, h, "")
		return len(rs) > 0 && rs[0]["output"] == "edited by hand\n"
	})
}

// @reboot entries run once per boot of the machine, not at every start.
func TestRebootEntriesRunOncePerBoot(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/sys/kernel/random/boot_id"); err != nil {
		t.Skip("no boot id on this system")
	}
	deps := platformtest.ServiceDeps(t, "cron")
	tab := writeTab(t, "@reboot echo booted\n")
	set := &cron.Settings{Crontab: tab, Runner: true}
	first := newService(t, deps, set)
	h := platformtest.ServiceHost(t, first)
	waitFor(t, "the @reboot run", func() bool { rs := runsOf(t, h, ""); return len(rs) == 1 && finished(rs) })
	if r := runsOf(t, h, "")[0]; r["trigger"] != "reboot" || r["output"] != "booted\n" {
		t.Fatalf("run %v", r)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	h = platformtest.ServiceHost(t, newService(t, deps, set))
	time.Sleep(500 * time.Millisecond)
	if rs := runsOf(t, h, ""); len(rs) != 1 {
		t.Fatalf("@reboot ran again without a reboot: %v", rs)
	}
}

// Close ends a run in progress instead of waiting for it, so the agent's
// stop is not held up by a long job.
func TestCloseEndsRunsInProgress(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "started")
	tab := writeTab(t, "@daily touch "+marker+"; exec sleep 600\n")
	svc, err := cron.New(platformtest.ServiceDeps(t, "cron"), &cron.Settings{Crontab: tab, Runner: true})
	if err != nil {
		t.Fatal(err)
	}
	h := platformtest.ServiceHost(t, svc)
	id := entries(t, h)[0]["id"].(string)
	call(t, h, "POST", "/api/v1/cron/entries/"+id+"/run", nil)
	waitFor(t, "the run to start", func() bool { _, err := os.Stat(marker); return err == nil })
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

// In a system-format crontab a run switches to the entry's user.
func TestRunsAsTheEntrysUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	if _, err := user.Lookup("nobody"); err != nil {
		t.Skip("no user nobody")
	}
	tab := writeTab(t, "@daily nobody id -un; echo $LOGNAME $HOME\n")
	h := platformtest.ServiceHost(t, newService(t, platformtest.ServiceDeps(t, "cron"), &cron.Settings{Crontab: tab, Format: "system"}))
	id := entries(t, h)[0]["id"].(string)
	call(t, h, "POST", "/api/v1/cron/entries/"+id+"/run", nil)
	waitFor(t, "the run", func() bool { rs := runsOf(t, h, id); return len(rs) == 1 && finished(rs) })
	nobody, _ := user.Lookup("nobody")
	if r := runsOf(t, h, id)[0]; r["output"] != "nobody\nnobody "+nobody.HomeDir+"\n" || r["user"] != "nobody" {
		t.Fatalf("run %v", r)
	}
}
