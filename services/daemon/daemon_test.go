package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/platform/proc"
	"deckhand/services/daemon"
)

type fixture struct {
	svc   *daemon.Service
	h     *platform.Host
	seams *platformtest.Seams
	dir   string
}

// newFixture is a daemon service on a fresh data directory whose journal
// and notifier keep what they get. files are program files written first.
func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "daemon")
	seams := &platformtest.Seams{}
	deps.Journal, deps.Notifier = seams, seams
	dir := filepath.Join(deps.DataDir, "programs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := daemon.New(deps, &daemon.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return &fixture{svc: svc, h: platformtest.ServiceHost(t, svc), seams: seams, dir: dir}
}

// call sends a JSON request in-process and decodes the answer.
func (f *fixture) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	code, m, _ := platformtest.Call(t, f.h, method, path, body)
	return code, m
}

func (f *fixture) put(t *testing.T, id string, def map[string]any) map[string]any {
	t.Helper()
	code, m := f.call(t, "PUT", "/api/v1/daemon/programs/"+id, def)
	if code != 201 && code != 200 {
		t.Fatalf("PUT %s: %d %v", id, code, m)
	}
	return m
}

func (f *fixture) status(t *testing.T, id string) daemon.Status {
	t.Helper()
	v, err := f.svc.Get(context.Background(), daemon.ProgramRef{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return v.Status
}

// waitState polls until the program is in state (the test's only timing
// is this upper bound).
func (f *fixture) waitState(t *testing.T, id, state string, within time.Duration) daemon.Status {
	t.Helper()
	end := time.Now().Add(within)
	for {
		st := f.status(t, id)
		if st.State == state {
			return st
		}
		if time.Now().After(end) {
			t.Fatalf("%s: state %s after %s, want %s (%+v)", id, st.State, within, state, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// entries are the journal entries of source.
func (f *fixture) entries(source string) []contract.JournalEntry {
	var out []contract.JournalEntry
	for _, e := range f.seams.Entries() {
		if e.Source == source {
			out = append(out, e)
		}
	}
	return out
}

func TestCrashingProgramBacksOffThenGoesFatal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.put(t, "crash", map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo boom >&2; exit 3"},
		"start_retries": 3, "backoff": map[string]any{"initial": 0.05, "max": 0.15}})
	st := f.waitState(t, "crash", daemon.StateFatal, 20*time.Second)
	if st.Restarts != 3 || st.LastExitCode == nil || *st.LastExitCode != 3 || !strings.Contains(st.LastError, "4 failed starts") {
		t.Fatalf("status %+v, want 3 restarts, exit 3 and a reason", st)
	}
	// Four launches, spaced at least by the backoff: 50, 100, then 150 ms (capped).
	var starts []time.Time
	for _, e := range f.entries("daemon") {
		if e.Message == "crash: started" {
			starts = append(starts, e.Time)
		}
	}
	if len(starts) != 4 {
		t.Fatalf("%d starts, want 4", len(starts))
	}
	for i, min := range []time.Duration{50, 100, 150} {
		if gap := starts[i+1].Sub(starts[i]); gap < min*time.Millisecond {
			t.Fatalf("gap %d is %s, want at least %dms (backoff)", i, gap, min)
		}
	}
	// stderr reached the journal under the program's id, stream apart.
	var stderr int
	for _, e := range f.entries("crash") {
		if e.Message == "boom" && e.Fields["stream"] == "stderr" {
			stderr++
		}
	}
	if stderr != 4 {
		t.Fatalf("%d stderr lines in the journal, want 4: %+v", stderr, f.entries("crash"))
	}
	var crashed, fatal int
	for _, ev := range f.seams.Events() {
		if ev.Kind == contract.EventProgramCrashed && ev.Data["program"] == "crash" {
			crashed++
			if ev.Data["state"] == daemon.StateFatal {
				fatal++
			}
		}
	}
	if crashed != 4 || fatal != 1 {
		t.Fatalf("%d program.crashed events (%d fatal), want 3 crashes and then fatal", crashed, fatal)
	}
	// A start on request begins afresh.
	code, m := f.call(t, "POST", "/api/v1/daemon/programs/crash/start", nil)
	if code != 200 || m["status"].(map[string]any)["restarts"].(float64) != 0 {
		t.Fatalf("start: %d %v", code, m)
	}
}

func TestRestartPolicies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	// Up past start_seconds, then a failure: restarted at once, again and again.
	f.put(t, "flaky", map[string]any{"command": "/bin/sh", "args": []string{"-c", "sleep 0.2; exit 1"}, "start_seconds": 0.05})
	// A clean exit under on-failure is final.
	f.put(t, "oneshot", map[string]any{"command": "/bin/true"})
	// never: a failure after starting is final too.
	f.put(t, "never", map[string]any{"command": "/bin/sh", "args": []string{"-c", "sleep 0.2; exit 7"}, "restart": "never", "start_seconds": 0.05})
	end := time.Now().Add(20 * time.Second)
	for f.status(t, "flaky").Restarts < 3 {
		if time.Now().After(end) {
			t.Fatalf("flaky not restarted: %+v", f.status(t, "flaky"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := f.waitState(t, "oneshot", daemon.StateExited, 10*time.Second); *st.LastExitCode != 0 || st.Restarts != 0 {
		t.Fatalf("oneshot %+v", st)
	}
	if st := f.waitState(t, "never", daemon.StateExited, 10*time.Second); *st.LastExitCode != 7 || st.Restarts != 0 {
		t.Fatalf("never %+v", st)
	}
}

func TestDependsOnWaitsForReadiness(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	f.put(t, "db", map[string]any{"command": os.Args[0], "autostart": false,
		"env":       map[string]string{"DAEMON_TEST_LISTEN": "127.0.0.1:" + strconv.Itoa(port), "DAEMON_TEST_DELAY": "700ms"},
		"readiness": map[string]any{"tcp": "127.0.0.1:" + strconv.Itoa(port), "interval": 0.05}})
	// app fails (and, with no retries, goes fatal) unless db's port
	// accepts when it starts.
	f.put(t, "app", map[string]any{"command": "/bin/bash", "autostart": false, "start_retries": 0,
		"args":       []string{"-c", "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + " && echo connected"},
		"depends_on": []string{"db"}})
	code, m := f.call(t, "POST", "/api/v1/daemon/programs/app/start?wait=true&timeout=20", nil)
	if code != 200 {
		t.Fatalf("start: %d %v", code, m)
	}
	st := f.waitState(t, "app", daemon.StateExited, 20*time.Second)
	if *st.LastExitCode != 0 {
		t.Fatalf("app %+v", st)
	}
	if db := f.status(t, "db"); db.State != daemon.StateRunning {
		t.Fatalf("db %+v", db)
	}
	var lines []string
	for _, e := range f.entries("app") {
		lines = append(lines, e.Message)
	}
	if strings.Join(lines, "|") != "connected" {
		t.Fatalf("app output %q", lines)
	}
}

// TestMain lets the test binary serve as a program: with
// DAEMON_TEST_LISTEN it listens there after DAEMON_TEST_DELAY.
func TestMain(m *testing.M) {
	if addr := os.Getenv("DAEMON_TEST_LISTEN"); addr != "" {
		d, _ := time.ParseDuration(os.Getenv("DAEMON_TEST_DELAY"))
		time.Sleep(d)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(1)
			}
			c.Close()
		}
	}
	os.Exit(m.Run())
}

func alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func TestStopKillsChildrenOfChildren(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	// A child shell with its own child, a grandchild that left the
	// process group (setsid), and a leader that ignores SIGTERM.
	script := `trap '' TERM; sh -c 'sleep 300 & sleep 300' & setsid sleep 301 & echo up; while :; do sleep 1; done`
	f.put(t, "tree", map[string]any{"command": "/bin/sh", "args": []string{"-c", script}, "stop_timeout": 0.5, "start_seconds": 0.1})
	st := f.waitState(t, "tree", daemon.StateRunning, 10*time.Second)
	var desc []int
	end := time.Now().Add(10 * time.Second)
	for len(desc) < 4 && time.Now().Before(end) {
		desc = proc.Descendants(st.PID)
		time.Sleep(20 * time.Millisecond)
	}
	if len(desc) < 4 {
		t.Fatalf("descendants %v, want the sh, its two sleeps and the setsid sleep", desc)
	}
	code, m := f.call(t, "POST", "/api/v1/daemon/programs/tree/stop", nil)
	if code != 200 || m["status"].(map[string]any)["state"] != daemon.StateStopped {
		t.Fatalf("stop: %d %v", code, m)
	}
	if alive(st.PID) {
		t.Fatalf("leader %d alive", st.PID)
	}
	time.Sleep(50 * time.Millisecond) // SIGKILL is delivered asynchronously
	for _, pid := range desc {
		if alive(pid) {
			t.Fatalf("descendant %d survived the stop", pid)
		}
	}
	if ex := f.status(t, "tree").LastExitCode; ex == nil || *ex != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit %v, want SIGKILL after the ignored TERM", ex)
	}
}

func TestSignalReachesTheProgram(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.put(t, "sig", map[string]any{"command": "/bin/sh", "start_seconds": 0.1,
		"args": []string{"-c", `trap 'echo got-usr1' USR1; echo ready; while :; do sleep 0.05; done`}})
	f.waitState(t, "sig", daemon.StateRunning, 10*time.Second)
	code, m := f.call(t, "POST", "/api/v1/daemon/programs/sig/signal", map[string]any{"signal": "SIGUSR1"})
	if code != 200 {
		t.Fatalf("signal: %d %v", code, m)
	}
	end := time.Now().Add(10 * time.Second)
	for {
		var got bool
		for _, e := range f.entries("sig") {
			got = got || (e.Message == "got-usr1" && e.Fields["stream"] == "stdout")
		}
		if got {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no got-usr1 in %+v", f.entries("sig"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, m = f.call(t, "POST", "/api/v1/daemon/programs/sig/signal", map[string]any{"signal": "NOPE"})
	if code != 400 || m["details"] != "signal" {
		t.Fatalf("bad signal: %d %v", code, m)
	}
	f.call(t, "POST", "/api/v1/daemon/programs/sig/stop", nil)
	code, m = f.call(t, "POST", "/api/v1/daemon/programs/sig/signal", map[string]any{"signal": "HUP"})
	if code != 409 {
		t.Fatalf("signal to a stopped program: %d %v", code, m)
	}
}

func TestBadDefinitionsAreRefusedWhole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.put(t, "a", map[string]any{"command": "/bin/sleep", "args": []string{"300"}, "autostart": false})
	f.put(t, "b", map[string]any{"command": "/bin/sleep", "args": []string{"300"}, "autostart": false, "depends_on": []string{"a"}})
	before, _ := os.ReadFile(filepath.Join(f.dir, "a.json"))
	cases := []struct {
		id      string
		body    any
		details string
		has     string
	}{
		{"a", map[string]any{"command": ""}, "command", "required"},
		{"a", map[string]any{"command": "x", "restart": "sometimes"}, "restart", "always, on-failure or never"},
		{"a", map[string]any{"command": "x", "cwd": "rel"}, "cwd", "absolute"},
		{"a", map[string]any{"command": "x", "stop_signal": "BOGUS"}, "stop_signal", "unknown signal"},
		{"a", map[string]any{"command": "x", "start_retries": -1}, "start_retries", "0 to 100"},
		{"a", map[string]any{"command": "x", "backoff": map[string]any{"initial": 5, "max": 1}}, "backoff.max", "at least"},
		{"a", map[string]any{"command": "x", "readiness": map[string]any{"tcp": "nope"}}, "readiness.tcp", "host:port"},
		{"a", map[string]any{"command": "x", "readiness": map[string]any{}}, "readiness", "exactly one"},
		{"a", map[string]any{"command": "x", "depends_on": []string{"b"}}, "depends_on", "cycle: a → b → a"},
		{"a", map[string]any{"command": "x", "depends_on": []string{"a"}}, "depends_on", "cycle: a → a"},
		{"a", map[string]any{"command": "x", "depends_on": []string{"ghost"}}, "depends_on", `"ghost", which is not defined`},
		{"a", map[string]any{"command": "x", "bogus": 1}, "bogus", "unknown field"},
		{"a", map[string]any{"command": 5}, "command", "must be a string"},
		{"a", map[string]any{"command": "x", "id": "other"}, "id", "differs"},
		{"bad%20id", map[string]any{"command": "x"}, "id", "letters, digits"},
	}
	for _, tc := range cases {
		code, m := f.call(t, "PUT", "/api/v1/daemon/programs/"+tc.id, tc.body)
		msg, _ := m["message"].(string)
		if code != 400 || m["code"] != "INVALID" || m["details"] != tc.details || !strings.Contains(msg, tc.has) {
			t.Errorf("PUT %s %v: %d %v, want 400 naming %s (%q)", tc.id, tc.body, code, m, tc.details, tc.has)
		}
	}
	after, _ := os.ReadFile(filepath.Join(f.dir, "a.json"))
	if !bytes.Equal(before, after) {
		t.Fatalf("a.json changed by refused writes:\n%s\n%s", before, after)
	}
	if ents, _ := os.ReadDir(f.dir); len(ents) != 2 {
		t.Fatalf("program dir holds %d files, want 2", len(ents))
	}
	if code, m := f.call(t, "DELETE", "/api/v1/daemon/programs/a", nil); code != 409 || !strings.Contains(m["message"].(string), "b") {
		t.Fatalf("delete a dependency: %d %v", code, m)
	}
	if code, _ := f.call(t, "GET", "/api/v1/daemon/programs/ghost", nil); code != 404 {
		t.Fatalf("unknown program: %d", code)
	}
}

func TestProgramFilesLoadAtStart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{
		"web.json":    `{"command": "/bin/sh", "args": ["-c", "echo hello; sleep 300"], "start_seconds": 0.1}`,
		"off.json":    `{"command": "/bin/sleep", "args": ["300"], "autostart": false}`,
		"broken.json": `{"command": "/bin/true", "restart": "maybe"}`,
		"loop1.json":  `{"command": "/bin/true", "depends_on": ["loop2"]}`,
		"loop2.json":  `{"command": "/bin/true", "depends_on": ["loop1"]}`,
		"notes.txt":   `not a program`,
	})
	f.waitState(t, "web", daemon.StateRunning, 10*time.Second)
	if st := f.status(t, "off"); st.State != daemon.StateStopped {
		t.Fatalf("off %+v", st)
	}
	l, _ := f.svc.List(context.Background(), daemon.ProgramFilter{})
	if len(l.Programs) != 2 || len(l.SkippedFiles) != 3 {
		t.Fatalf("programs %d, skipped %q", len(l.Programs), l.SkippedFiles)
	}
	joined := strings.Join(l.SkippedFiles, "\n")
	for _, want := range []string{"broken.json: restart: must be", "cycle: loop1 → loop2 → loop1"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("skipped %q lacks %q", joined, want)
		}
	}
	code, m := f.call(t, "GET", "/api/v1/daemon/programs?state=running", nil)
	if code != 200 || len(m["programs"].([]any)) != 1 {
		t.Fatalf("list running: %d %v", code, m)
	}
	// disable writes autostart false to the file; it does not stop it.
	if code, _ := f.call(t, "POST", "/api/v1/daemon/programs/web/disable", nil); code != 200 {
		t.Fatal(code)
	}
	raw, _ := os.ReadFile(filepath.Join(f.dir, "web.json"))
	if !strings.Contains(string(raw), `"autostart": false`) || f.status(t, "web").State != daemon.StateRunning {
		t.Fatalf("after disable: %s %+v", raw, f.status(t, "web"))
	}
	if code, m := f.call(t, "DELETE", "/api/v1/daemon/programs/web", nil); code != 200 || m["status"].(map[string]any)["state"] != daemon.StateStopped {
		t.Fatalf("delete: %d %v", code, m)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "web.json")); !os.IsNotExist(err) {
		t.Fatalf("web.json still there: %v", err)
	}
}

func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	platformtest.CheckRoutesDocumented(t, f.h)
	if n := platformtest.CheckQueryValidation(t, f.h); n == 0 {
		t.Fatal("no query parameter checked")
	}
}

func TestUserEnvCwdAndReplace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	def := map[string]any{"command": "/bin/sh", "args": []string{"-c", `echo "$(id -un) $GREETING $(pwd)"; sleep 300`},
		"env": map[string]string{"GREETING": "hi"}, "cwd": "/tmp", "start_seconds": 0.1}
	want := "root hi /tmp"
	if os.Geteuid() == 0 {
		def["user"] = "nobody"
		want = "nobody hi /tmp"
	} else {
		delete(def, "user")
		want = ""
	}
	f.put(t, "who", def)
	st := f.waitState(t, "who", daemon.StateRunning, 10*time.Second)
	end := time.Now().Add(10 * time.Second)
	for len(f.entries("who")) == 0 && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	got := f.entries("who")
	if len(got) != 1 || (want != "" && got[0].Message != want) || !strings.HasSuffix(got[0].Message, " hi /tmp") {
		t.Fatalf("output %+v, want %q", got, want)
	}
	// The same definition again leaves the running program alone; a
	// changed one restarts it.
	f.put(t, "who", def)
	if again := f.status(t, "who"); again.PID != st.PID || again.State != daemon.StateRunning {
		t.Fatalf("unchanged PUT restarted it: %+v -> %+v", st, again)
	}
	def["env"] = map[string]string{"GREETING": "hello"}
	f.put(t, "who", def)
	if again := f.waitState(t, "who", daemon.StateRunning, 10*time.Second); again.PID == st.PID {
		t.Fatalf("changed PUT kept pid %d", st.PID)
	}
}

func TestReadinessProbes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	marker := filepath.Join(t.TempDir(), "ready")
	// A command probe that passes once the program has written its marker.
	f.put(t, "cmd", map[string]any{"command": "/bin/sh", "args": []string{"-c", "sleep 0.3; touch " + marker + "; sleep 300"},
		"readiness": map[string]any{"command": []string{"test", "-f", marker}, "interval": 0.05}})
	if st := f.waitState(t, "cmd", daemon.StateRunning, 10*time.Second); st.PID == 0 {
		t.Fatalf("cmd %+v", st)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("running before the probe could pass")
	}
	// An HTTP probe against a port nobody serves times out: a failed
	// start, fatal with no retries, the process killed.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	f.put(t, "web", map[string]any{"command": "/bin/sleep", "args": []string{"300"}, "start_retries": 0,
		"readiness": map[string]any{"http": "http://" + addr + "/health", "interval": 0.05, "timeout": 0.3}})
	st := f.waitState(t, "web", daemon.StateFatal, 10*time.Second)
	if !strings.Contains(st.LastError, "not ready after 0.3s") || st.LastSignal != "KILL" {
		t.Fatalf("web %+v", st)
	}
}

// TestConcurrentControlLeavesNoProcess races writes, starts, stops and
// signals on three programs (under -race), then closes the service: no
// process of the test binary may be left. Not parallel, so no other
// test's processes are around when it counts.
func TestConcurrentControlLeavesNoProcess(t *testing.T) {
	f := newFixture(t, nil)
	ids := []string{"p0", "p1", "p2"}
	for _, id := range ids {
		f.put(t, id, map[string]any{"command": "/bin/sh", "args": []string{"-c", "sleep 300 & sleep 300"}, "stop_timeout": 1, "start_seconds": 0.05})
	}
	done := make(chan struct{})
	for w := 0; w < 6; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 15; i++ {
				id := ids[(w+i)%len(ids)]
				switch (w + i) % 5 {
				case 0:
					f.call(t, "PUT", "/api/v1/daemon/programs/"+id, map[string]any{"command": "/bin/sh",
						"args": []string{"-c", "sleep 300 & sleep 300"}, "stop_timeout": 1, "start_seconds": 0.05, "env": map[string]string{"I": strconv.Itoa(i)}})
				case 1:
					f.call(t, "POST", "/api/v1/daemon/programs/"+id+"/start", nil)
				case 2:
					f.call(t, "POST", "/api/v1/daemon/programs/"+id+"/stop", nil)
				case 3:
					f.call(t, "POST", "/api/v1/daemon/programs/"+id+"/signal", map[string]any{"signal": "CONT"})
				default:
					f.call(t, "GET", "/api/v1/daemon/programs", nil)
				}
			}
		}()
	}
	for w := 0; w < 6; w++ {
		<-done
	}
	if err := f.svc.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	var left []int
	for _, pid := range proc.Descendants(os.Getpid()) {
		if alive(pid) {
			left = append(left, pid)
		}
	}
	if len(left) > 0 {
		t.Fatalf("processes left after Close: %v", left)
	}
}

func TestReloadAppliesTheDirectoryOrNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{
		"keep.json":   `{"command": "/bin/sleep", "args": ["300"], "start_seconds": 0.1}`,
		"change.json": `{"command": "/bin/sleep", "args": ["300"], "start_seconds": 0.1}`,
		"gone.json":   `{"command": "/bin/sleep", "args": ["300"], "start_seconds": 0.1}`,
	})
	keep := f.waitState(t, "keep", daemon.StateRunning, 10*time.Second)
	change := f.waitState(t, "change", daemon.StateRunning, 10*time.Second)
	gone := f.waitState(t, "gone", daemon.StateRunning, 10*time.Second)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("change.json", `{"command": "/bin/sleep", "args": ["301"], "start_seconds": 0.1}`)
	write("new.json", `{"command": "/bin/sleep", "args": ["300"], "start_seconds": 0.1, "depends_on": ["keep"]}`)
	if err := os.Remove(filepath.Join(f.dir, "gone.json")); err != nil {
		t.Fatal(err)
	}
	write("bad.json", `{"command": "/bin/true", "stop_timeout": -1}`)
	code, m := f.call(t, "POST", "/api/v1/daemon/reload", nil)
	if code != 400 || m["details"] != "bad.json: stop_timeout" {
		t.Fatalf("reload with a bad file: %d %v", code, m)
	}
	if l, _ := f.svc.List(context.Background(), daemon.ProgramFilter{}); len(l.Programs) != 3 || f.status(t, "gone").PID != gone.PID || f.status(t, "change").PID != change.PID {
		t.Fatal("a refused reload changed programs")
	}
	if err := os.Remove(filepath.Join(f.dir, "bad.json")); err != nil {
		t.Fatal(err)
	}
	code, m = f.call(t, "POST", "/api/v1/daemon/reload", nil)
	if code != 200 || m["programs"].(float64) != 3 || m["added"].([]any)[0] != "new" || m["changed"].([]any)[0] != "change" || m["removed"].([]any)[0] != "gone" {
		t.Fatalf("reload: %d %v", code, m)
	}
	if f.status(t, "keep").PID != keep.PID {
		t.Fatal("an unchanged program was restarted")
	}
	if st := f.waitState(t, "change", daemon.StateRunning, 10*time.Second); st.PID == change.PID {
		t.Fatal("a changed program kept its old process")
	}
	f.waitState(t, "new", daemon.StateRunning, 10*time.Second)
	if alive(gone.PID) {
		t.Fatalf("removed program %d still runs", gone.PID)
	}
	if code, _ := f.call(t, "GET", "/api/v1/daemon/programs/gone", nil); code != 404 {
		t.Fatalf("removed program: %d", code)
	}
}
