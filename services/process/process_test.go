package process_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/services/process"
)

func TestRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := t.TempDir()
	cases := []struct {
		name  string
		body  map[string]any
		check func(t *testing.T, r process.RunResult)
	}{
		{"exit 0", map[string]any{"cmd": []string{"true"}}, func(t *testing.T, r process.RunResult) {
			want(t, r.State == "exited" && r.EndReason == "exit" && *r.ExitCode == 0 && r.Signal == "", r)
		}},
		{"exit 3 with both streams", map[string]any{"shell": "echo out; echo err >&2; exit 3"}, func(t *testing.T, r process.RunResult) {
			want(t, r.State == "exited" && *r.ExitCode == 3 && r.Stdout == "out\n" && r.Stderr == "err\n" && !r.Truncated, r)
		}},
		{"exit 255", map[string]any{"cmd": []string{"sh", "-c", "exit 255"}}, func(t *testing.T, r process.RunResult) {
			want(t, *r.ExitCode == 255, r)
		}},
		{"killed by a signal", map[string]any{"shell": "kill -TERM $$; sleep 5"}, func(t *testing.T, r process.RunResult) {
			want(t, r.State == "killed" && r.EndReason == "signal" && r.Signal == "TERM" && *r.ExitCode == 143, r)
		}},
		{"stdin text", map[string]any{"cmd": []string{"cat"}, "stdin": "hello ünïcode"}, func(t *testing.T, r process.RunResult) {
			want(t, r.Stdout == "hello ünïcode" && *r.ExitCode == 0, r)
		}},
		{"stdin base64", map[string]any{"cmd": []string{"od", "-An", "-tx1"}, "stdin": "AP8K", "stdin_encoding": "base64"}, func(t *testing.T, r process.RunResult) {
			want(t, strings.TrimSpace(r.Stdout) == "00 ff 0a", r)
		}},
		{"no stdin is end of file", map[string]any{"cmd": []string{"cat"}}, func(t *testing.T, r process.RunResult) {
			want(t, r.Stdout == "" && *r.ExitCode == 0, r)
		}},
		{"binary output is base64", map[string]any{"shell": `printf '\377\000'; printf 'e' >&2`}, func(t *testing.T, r process.RunResult) {
			want(t, r.Encoding == "base64" && r.Stdout == "/wA=" && r.Stderr == "ZQ==", r)
		}},
		{"max_output_bytes keeps the first bytes", map[string]any{"shell": "head -c 100000 /dev/zero | tr '\\0' a; echo tail >&2", "max_output_bytes": 10}, func(t *testing.T, r process.RunResult) {
			want(t, r.Stdout == "aaaaaaaaaa" && r.Stderr == "tail\n" && r.Truncated, r)
		}},
		{"a cut character is not left half", map[string]any{"shell": "printf 'aé'", "max_output_bytes": 2}, func(t *testing.T, r process.RunResult) {
			want(t, r.Stdout == "a" && r.Encoding == "" && r.Truncated, r)
		}},
		{"max_chars keeps the first characters", map[string]any{"shell": "printf 'éééé'; printf 'ab' >&2", "max_chars": 3}, func(t *testing.T, r process.RunResult) {
			want(t, r.Stdout == "ééé" && r.Stderr == "ab" && r.Truncated, r)
		}},
		{"max_chars of binary output cuts whole base64 groups", map[string]any{"shell": `printf '\377\000\377\000\377\000'`, "max_chars": 7}, func(t *testing.T, r process.RunResult) {
			want(t, r.Encoding == "base64" && r.Stdout == "/wD/" && r.Truncated, r)
		}},
		{"env and cwd", map[string]any{"shell": "echo $FOO; pwd", "env": map[string]string{"FOO": "bar"}, "cwd": tmp}, func(t *testing.T, r process.RunResult) {
			want(t, r.Stdout == "bar\n"+tmp+"\n", r)
		}},
		{"its id in its environment", map[string]any{"shell": "echo -n $DECKHAND_PROCESS_ID"}, func(t *testing.T, r process.RunResult) {
			want(t, r.Stdout == r.ID && r.ID != "", r)
		}},
		{"PATH of env finds the program", map[string]any{"cmd": []string{"mytool"}, "env": map[string]string{"PATH": tmp}}, func(t *testing.T, r process.RunResult) {
			want(t, r.Stdout == "mine\n", r)
		}},
		{"unknown program", map[string]any{"cmd": []string{"no-such-program-here"}}, func(t *testing.T, r process.RunResult) {
			want(t, r.State == "failed_to_start" && r.EndReason == "failed_to_start" && r.ExitCode == nil &&
				strings.Contains(r.Error, "executable file not found"), r)
		}},
		{"missing path", map[string]any{"cmd": []string{"/nonexistent/prog"}}, func(t *testing.T, r process.RunResult) {
			want(t, r.State == "failed_to_start" && strings.Contains(r.Error, "no such file or directory"), r)
		}},
		{"not executable", map[string]any{"cmd": []string{filepath.Join(tmp, "plain")}}, func(t *testing.T, r process.RunResult) {
			want(t, r.State == "failed_to_start" && strings.Contains(r.Error, "permission denied"), r)
		}},
	}
	if err := os.WriteFile(filepath.Join(tmp, "mytool"), []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "plain"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, e.run(t, tc.body))
		})
	}
}

func want(t *testing.T, ok bool, r any) {
	t.Helper()
	if !ok {
		raw, _ := json.Marshal(r)
		t.Fatalf("unexpected: %s", raw)
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sleeper := e.start(t, map[string]any{"cmd": []string{"sleep", "30"}, "pty": map[string]int{"rows": 10, "cols": 10}})
	t.Cleanup(func() { e.call(t, "DELETE", "/api/v1/process/"+sleeper.ID+"?grace_ms=1", nil) })
	cases := []struct {
		method, path string
		body         any
		status       int
		field        string
	}{
		{"POST", "/api/v1/process/run", map[string]any{"cmd": []string{"true"}, "user": "no-such-user-x"}, 400, "user"},
		{"POST", "/api/v1/process", map[string]any{"cmd": []string{"true"}, "cwd": "/no/such/dir"}, 400, "cwd"},
		{"POST", "/api/v1/process", map[string]any{"cmd": []string{"true"}, "cwd": "relative"}, 400, "cwd"},
		{"POST", "/api/v1/process", map[string]any{"cmd": []string{"true"}, "cwd": "/etc/hostname"}, 400, "cwd"},
		{"POST", "/api/v1/process", map[string]any{}, 400, "cmd"},
		{"POST", "/api/v1/process", map[string]any{"cmd": []string{"true"}, "shell": "true"}, 400, "shell"},
		{"POST", "/api/v1/process", map[string]any{"cmd": []string{""}}, 400, "cmd"},
		{"POST", "/api/v1/process", map[string]any{"cmd": "true"}, 400, "cmd"},
		{"POST", "/api/v1/process", map[string]any{"shell": "true", "env": map[string]string{"A=B": "c"}}, 400, "env"},
		{"POST", "/api/v1/process", map[string]any{"shell": "true", "timeout_ms": -1}, 400, "timeout_ms"},
		{"POST", "/api/v1/process", map[string]any{"shell": "true", "pty": map[string]int{"rows": 0, "cols": 80}}, 400, "pty.rows"},
		{"POST", "/api/v1/process", map[string]any{"shell": "true", "stdin": "!!", "stdin_encoding": "base64"}, 400, "stdin"},
		{"POST", "/api/v1/process", map[string]any{"shell": "true", "stdin_encoding": "hex"}, 400, "stdin_encoding"},
		{"POST", "/api/v1/process", map[string]any{"shell": "true", "tag": "a\nb"}, 400, "tag"},
		{"POST", "/api/v1/process", map[string]any{"shell": "true", "bogus": 1}, 400, "bogus"},
		{"POST", "/api/v1/process/run", map[string]any{"shell": "true", "max_output_bytes": 1 << 30}, 400, "max_output_bytes"},
		{"POST", "/api/v1/process/run", map[string]any{"shell": "true", "max_chars": -1}, 400, "max_chars"},
		{"POST", "/api/v1/process/" + sleeper.ID + "/signal", map[string]any{"signal": "BOGUS"}, 400, "signal"},
		{"POST", "/api/v1/process/" + sleeper.ID + "/signal", map[string]any{"signal": 99}, 400, "signal"},
		{"POST", "/api/v1/process/" + sleeper.ID + "/signal", map[string]any{"signal": true}, 400, "signal"},
		{"POST", "/api/v1/process/" + sleeper.ID + "/signal", map[string]any{}, 400, "signal"},
		{"POST", "/api/v1/process/" + sleeper.ID + "/resize", map[string]any{"rows": 5, "cols": 0}, 400, "size.cols"},
		{"DELETE", "/api/v1/process/" + sleeper.ID + "?grace_ms=-1", nil, 400, "grace_ms"},
		{"GET", "/api/v1/process/" + sleeper.ID + "/output?since=999999", nil, 400, "since"},
		{"GET", "/api/v1/process?state=sleeping", nil, 400, "state"},
		{"GET", "/api/v1/process/nope", nil, 404, "process"},
		{"POST", "/api/v1/process/nope/signal", map[string]any{"signal": "TERM"}, 404, "process"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path+" "+tc.field, func(t *testing.T) {
			status, raw := e.call(t, tc.method, tc.path, tc.body)
			var eb errorBody
			_ = json.Unmarshal(raw, &eb)
			if status != tc.status || eb.Details != tc.field || !strings.Contains(eb.Message, tc.field) {
				t.Fatalf("%d %s, want %d naming %s", status, raw, tc.status, tc.field)
			}
		})
	}
	if p := e.get(t, sleeper.ID); p.State != "running" {
		t.Fatalf("a refused request changed the process: %+v", p)
	}
}

func TestSignalReachesTheWholeGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t, map[string]any{"shell": "sleep 300 & echo $!; sleep 300 & echo $!; wait"})
	var kids []int
	waitFor(t, "two grandchildren", func() bool {
		out, _ := e.output(t, p.ID)
		kids = pids(t, out)
		return len(kids) == 2
	})
	// By number: SIGUSR1 ends sh and both sleeps (default action).
	var after process.Process
	e.decode(t, "POST", "/api/v1/process/"+p.ID+"/signal", map[string]any{"signal": 10}, 200, &after)
	end := e.waitEnded(t, p.ID)
	if end.State != "killed" || end.EndReason != "signal" || end.Signal != "USR1" || *end.ExitCode != 138 {
		t.Fatalf("%+v", end)
	}
	for _, k := range kids {
		waitFor(t, fmt.Sprintf("grandchild %d to end", k), func() bool { return gone(k) })
	}
	// Signalling an ended process is a conflict, not a silent success.
	if status, raw := e.call(t, "POST", "/api/v1/process/"+p.ID+"/signal", map[string]any{"signal": "TERM"}); status != 409 {
		t.Fatalf("%d %s", status, raw)
	}
}

func TestTimeoutKillsTheTreeAndKeepsOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(s *process.Settings) { s.KillGrace = 200 * time.Millisecond })
	// One grandchild in the group, one that left it (setsid): both go.
	r := e.run(t, map[string]any{"shell": "echo started; sleep 300 & echo $!; setsid sleep 300 & echo $!; wait", "timeout_ms": 500})
	if r.State != "timed_out" || r.EndReason != "timeout" || r.Signal != "TERM" || !strings.HasPrefix(r.Stdout, "started\n") {
		t.Fatalf("%+v", r)
	}
	kids := pids(t, strings.TrimPrefix(r.Stdout, "started\n"))
	if len(kids) != 2 {
		t.Fatalf("output %q", r.Stdout)
	}
	for _, k := range kids {
		waitFor(t, fmt.Sprintf("sleep %d to end", k), func() bool { return gone(k) })
	}
	if p := e.get(t, r.ID); p.State != "timed_out" || p.TimeoutMS != 500 {
		t.Fatalf("%+v", p)
	}
}

func TestDeleteStopsATreeThatIgnoresTERM(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t, map[string]any{"shell": `trap "" TERM; sleep 300 & echo $!; echo ready; wait; sleep 300`})
	var kid int
	waitFor(t, "the grandchild", func() bool {
		out, _ := e.output(t, p.ID)
		if !strings.Contains(out, "ready") {
			return false
		}
		kid = pids(t, strings.TrimSuffix(out, "ready\n"))[0]
		return true
	})
	var end process.Process
	e.decode(t, "DELETE", "/api/v1/process/"+p.ID+"?grace_ms=300", nil, 200, &end)
	if end.State != "killed" || end.EndReason != "killed" || end.Signal != "KILL" {
		t.Fatalf("%+v", end)
	}
	waitFor(t, "the grandchild to end", func() bool { return gone(kid) })
	// Again: answers the same record.
	var again process.Process
	e.decode(t, "DELETE", "/api/v1/process/"+p.ID, nil, 200, &again)
	if again.State != "killed" || again.EndedAt == nil || !again.EndedAt.Equal(*end.EndedAt) {
		t.Fatalf("%+v", again)
	}
}

func TestStdinRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t, map[string]any{"cmd": []string{"cat"}, "keep_stdin_open": true, "stdin": "first "})
	if !p.StdinOpen {
		t.Fatalf("%+v", p)
	}
	var w process.StdinResult
	e.decode(t, "POST", "/api/v1/process/"+p.ID+"/stdin", map[string]any{"data": "c2Vjb25kIA==", "encoding": "base64"}, 200, &w)
	if w.Written != 7 {
		t.Fatalf("%+v", w)
	}
	status, raw := call(t, "POST", e.url+"/api/v1/process/"+p.ID+"/stdin", "application/octet-stream", []byte("third\x00\xff"))
	if status != 200 || string(raw) != `{"written":7}` {
		t.Fatalf("%d %s", status, raw)
	}
	var closed process.Process
	e.decode(t, "POST", "/api/v1/process/"+p.ID+"/stdin/close", nil, 200, &closed)
	if closed.StdinOpen {
		t.Fatalf("%+v", closed)
	}
	end := e.waitEnded(t, p.ID)
	if end.State != "exited" || *end.ExitCode != 0 {
		t.Fatalf("%+v", end)
	}
	var page process.OutputPage
	e.decode(t, "GET", "/api/v1/process/"+p.ID+"/output", nil, 200, &page)
	if len(page.Chunks) != 1 || page.Chunks[0].Encoding != "base64" || page.Chunks[0].Data != base64.StdEncoding.EncodeToString([]byte("first second third\x00\xff")) || !page.Done {
		t.Fatalf("%+v", page)
	}
	// Closed input refuses more.
	q := e.start(t, map[string]any{"cmd": []string{"sleep", "30"}})
	defer e.call(t, "DELETE", "/api/v1/process/"+q.ID+"?grace_ms=1", nil)
	if status, raw := e.call(t, "POST", "/api/v1/process/"+q.ID+"/stdin", map[string]any{"data": "x"}); status != 409 {
		t.Fatalf("%d %s", status, raw)
	}
}

func TestPTYSizeAndResize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t, map[string]any{"shell": "test -t 0 && echo tty; stty size; read x; stty size; echo $TERM",
		"pty": map[string]int{"rows": 33, "cols": 111}})
	waitFor(t, "the first size", func() bool { out, _ := e.output(t, p.ID); return strings.Contains(out, "33 111") })
	var resized process.Process
	e.decode(t, "POST", "/api/v1/process/"+p.ID+"/resize", map[string]int{"rows": 40, "cols": 120}, 200, &resized)
	if resized.PTY == nil || resized.PTY.Rows != 40 || resized.PTY.Cols != 120 {
		t.Fatalf("%+v", resized)
	}
	e.decode(t, "POST", "/api/v1/process/"+p.ID+"/stdin", map[string]any{"data": "\n"}, 200, nil)
	end := e.waitEnded(t, p.ID)
	out, errOut := e.output(t, p.ID)
	if end.State != "exited" || errOut != "" || !strings.Contains(out, "tty\r\n33 111\r\n") || !strings.Contains(out, "40 120\r\nxterm-256color") {
		t.Fatalf("%+v %q", end, out)
	}
	// A process on pipes has no size.
	q := e.start(t, map[string]any{"cmd": []string{"sleep", "30"}})
	defer e.call(t, "DELETE", "/api/v1/process/"+q.ID+"?grace_ms=1", nil)
	if status, raw := e.call(t, "POST", "/api/v1/process/"+q.ID+"/resize", map[string]int{"rows": 4, "cols": 4}); status != 409 {
		t.Fatalf("%d %s", status, raw)
	}
}

func TestClientTokenStartsOneProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := map[string]any{"cmd": []string{"sleep", "30"}, "client_token": "tok-1", "tag": "token-test"}
	var wg sync.WaitGroup
	ids := make([]string, 50)
	statuses := make([]int, 50)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, raw := e.call(t, "POST", "/api/v1/process", body)
			var p process.Process
			_ = json.Unmarshal(raw, &p)
			ids[i], statuses[i] = p.ID, status
		}()
	}
	wg.Wait()
	created := 0
	for i, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("start %d answered %q (%d), first %q", i, id, statuses[i], ids[0])
		}
		if statuses[i] == 201 {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d answers said created", created)
	}
	var list process.ProcessList
	e.decode(t, "GET", "/api/v1/process?tag=token-test", nil, 200, &list)
	if len(list.Processes) != 1 {
		t.Fatalf("%d processes", len(list.Processes))
	}
	// The same token for another request is refused.
	body["cmd"] = []string{"sleep", "31"}
	if status, raw := e.call(t, "POST", "/api/v1/process", body); status != 409 || !strings.Contains(string(raw), "client_token") {
		t.Fatalf("%d %s", status, raw)
	}
	e.call(t, "DELETE", "/api/v1/process/"+ids[0]+"?grace_ms=1", nil)
}

func TestTooManyProcesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(s *process.Settings) { s.MaxRunning = 2 })
	a := e.start(t, map[string]any{"cmd": []string{"sleep", "30"}})
	b := e.start(t, map[string]any{"cmd": []string{"sleep", "30"}})
	defer e.call(t, "DELETE", "/api/v1/process/"+b.ID+"?grace_ms=1", nil)
	for _, path := range []string{"/api/v1/process", "/api/v1/process/run"} {
		if status, raw := e.call(t, "POST", path, map[string]any{"cmd": []string{"true"}}); status != 429 || !strings.Contains(string(raw), "TOO_MANY_REQUESTS") {
			t.Fatalf("%s: %d %s", path, status, raw)
		}
	}
	e.decode(t, "DELETE", "/api/v1/process/"+a.ID+"?grace_ms=1", nil, 200, nil)
	waitFor(t, "a slot", func() bool {
		status, _ := e.call(t, "POST", "/api/v1/process/run", map[string]any{"cmd": []string{"true"}})
		return status == 200
	})
}

func TestListAndGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	done := e.run(t, map[string]any{"cmd": []string{"true"}, "tag": "list-a"})
	run := e.start(t, map[string]any{"cmd": []string{"sleep", "30"}, "tag": "list-a"})
	defer e.call(t, "DELETE", "/api/v1/process/"+run.ID+"?grace_ms=1", nil)
	other := e.run(t, map[string]any{"cmd": []string{"false"}, "tag": "list-b"})
	ids := func(q string) []string {
		var l process.ProcessList
		e.decode(t, "GET", "/api/v1/process"+q, nil, 200, &l)
		var out []string
		for _, p := range l.Processes {
			out = append(out, p.ID)
		}
		return out
	}
	for q, wantIDs := range map[string][]string{
		"?tag=list-a":               {done.ID, run.ID},
		"?tag=list-a&state=running": {run.ID},
		"?tag=list-a&state=exited":  {done.ID},
		"?tag=list-b&state=exited":  {other.ID},
		"?tag=list-c":               nil,
	} {
		if got := ids(q); fmt.Sprint(got) != fmt.Sprint(wantIDs) {
			t.Errorf("%s: %v, want %v", q, got, wantIDs)
		}
	}
	p := e.get(t, run.ID)
	if p.State != "running" || p.PID == 0 || p.ExitCode != nil || p.Cmd[0] != "sleep" || p.Tag != "list-a" || p.StartedAt.IsZero() {
		t.Fatalf("%+v", p)
	}
	if q := e.get(t, other.ID); q.State != "exited" || *q.ExitCode != 1 || q.EndedAt == nil || !q.OutputComplete {
		t.Fatalf("%+v", q)
	}
}

func TestRetentionRemovesFinishedProcesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(s *process.Settings) { s.Retention = 200 * time.Millisecond })
	r := e.run(t, map[string]any{"shell": "echo kept for a while"})
	e.decode(t, "GET", "/api/v1/process/"+r.ID, nil, 200, nil)
	waitFor(t, "removal", func() bool { status, _ := e.call(t, "GET", "/api/v1/process/"+r.ID, nil); return status == 404 })

	f := newEnv(t, func(s *process.Settings) { s.MaxFinished = 2 })
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, f.run(t, map[string]any{"cmd": []string{"true"}}).ID)
	}
	var l process.ProcessList
	f.decode(t, "GET", "/api/v1/process", nil, 200, &l)
	if len(l.Processes) != 2 || l.Processes[0].ID != ids[2] || l.Processes[1].ID != ids[3] {
		t.Fatalf("%+v", l)
	}
	// Many ends keep exactly the newest, in order, while a background
	// process that ends in between counts among them.
	bg := f.start(t, map[string]any{"cmd": []string{"sleep", "30"}})
	ids = ids[:0]
	for i := 0; i < 20; i++ {
		ids = append(ids, f.run(t, map[string]any{"cmd": []string{"true"}}).ID)
		if i == 10 {
			f.decode(t, "DELETE", "/api/v1/process/"+bg.ID+"?grace_ms=100", nil, 200, nil)
			waitFor(t, "the kill", func() bool {
				var r process.Process
				f.decode(t, "GET", "/api/v1/process/"+bg.ID, nil, 200, &r)
				return r.State != process.StateRunning
			})
		}
	}
	f.decode(t, "GET", "/api/v1/process", nil, 200, &l)
	if len(l.Processes) != 2 || l.Processes[0].ID != ids[18] || l.Processes[1].ID != ids[19] {
		t.Fatalf("want the last two of %v, got %+v", ids, l)
	}
}

func TestJournal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run(t, map[string]any{"shell": "exit 2", "tag": "j"})
	p := e.start(t, map[string]any{"cmd": []string{"sleep", "30"}})
	e.decode(t, "POST", "/api/v1/process/"+p.ID+"/signal", map[string]any{"signal": "STOP"}, 200, nil)
	e.decode(t, "DELETE", "/api/v1/process/"+p.ID+"?grace_ms=100", nil, 200, nil)
	e.run(t, map[string]any{"cmd": []string{"no-such-program-here"}})
	var msgs []string
	for _, en := range e.seams.Entries() {
		if en.Source != "process" {
			t.Fatalf("source %q", en.Source)
		}
		msgs = append(msgs, en.Level+" "+en.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, w := range []string{
		"info process " + r.ID + " started: /bin/sh -c \"exit 2\"",
		"warn process " + r.ID + " exited with code 2",
		"info process " + p.ID + " started: sleep 30",
		"info process " + p.ID + ": SIGSTOP sent to its process group",
		"info process " + p.ID + ": kill requested",
		"warn process " + p.ID + " killed by SIGKILL",
		"error process ",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("journal lacks %q:\n%s", w, all)
		}
	}
}

func TestOutputBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(s *process.Settings) {
		s.OutputMemory, s.OutputMemoryTotal = 64<<10, 128<<10
		s.OutputDisk, s.OutputDiskTotal = 1<<20, 2<<20
	})
	// Nobody follows: the oldest output goes, within the bounds.
	var ids []string
	for i := 0; i < 3; i++ {
		r := e.run(t, map[string]any{"shell": "head -c 6000000 /dev/zero", "max_output_bytes": 1})
		if *r.ExitCode != 0 {
			t.Fatalf("%+v", r)
		}
		ids = append(ids, r.ID)
	}
	for _, id := range ids {
		if p := e.get(t, id); p.OutputBytes != 6000000 || p.OutputKeptFrom < 6000000-(1<<20)-(64<<10) {
			t.Fatalf("more kept than the per-process bound: %+v", p)
		}
	}
	// Memory always keeps the newest bytes (the end of the output).
	last := e.get(t, ids[2])
	if last.OutputKeptFrom >= last.OutputBytes {
		t.Fatalf("nothing kept: %+v", last)
	}
	var onDisk int64
	_ = filepath.Walk(filepath.Join(e.data, "output"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			onDisk += fi.Size()
		}
		return nil
	})
	if onDisk > 2<<20+(128<<10) {
		t.Fatalf("%d bytes on disk, bound 2 MiB", onDisk)
	}
	// A read from 0 is told what it missed, then gets what is kept.
	var page process.OutputPage
	e.decode(t, "GET", "/api/v1/process/"+last.ID+"/output?since=0&max_bytes=10", nil, 200, &page)
	if page.Gap == nil || page.Gap.From != 0 || page.Gap.To != last.OutputKeptFrom || len(page.Chunks) != 1 ||
		page.Chunks[0].Offset != last.OutputKeptFrom || len(page.Chunks[0].Data) != 10 || page.NextOffset != last.OutputKeptFrom+10 {
		t.Fatalf("%+v", page)
	}
}

func TestRoutesDocumentedAndQueriesChecked(t *testing.T) {
	t.Parallel()
	svc, err := process.New(platformtest.ServiceDeps(t, "process"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	h := platformtest.ServiceHost(t, svc)
	platformtest.CheckRoutesDocumented(t, h)
	if n := platformtest.CheckQueryValidation(t, h); n == 0 {
		t.Fatal("no query parameters checked")
	}
}

func TestSettingsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tune  func(*process.Settings)
		field string
	}{
		{func(s *process.Settings) { s.MaxRunning = 0 }, "--process-max-running"},
		{func(s *process.Settings) { s.OutputMemory = 10 }, "--process-output-memory"},
		{func(s *process.Settings) { s.OutputDiskTotal = s.OutputDisk - 1 }, "--process-output-disk-total"},
		{func(s *process.Settings) { s.Retention = -1 }, "--process-retention"},
	} {
		s := process.Defaults()
		tc.tune(s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%v, want one naming %s", err, tc.field)
		}
	}
	if err := process.Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
}
