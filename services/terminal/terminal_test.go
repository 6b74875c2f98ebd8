package terminal_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/services/terminal"
)

func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	svc := terminal.New(contract.ServiceDeps{Name: "terminal"}, nil)
	defer svc.Close()
	platformtest.CheckRoutesDocumented(t, platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "terminal"}}, svc.Routes()))
}

func TestEchoRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	c := e.dial(t, "?shell=/bin/bash&cols=100&rows=30", nil)
	// The shell echoes the command with $((40+2)) unexpanded, so only the
	// command's own output contains the marker.
	c.send(t, "echo rt-$((40+2))\r")
	c.waitOutput(t, "rt-42")
	list := e.sessions(t)
	if len(list) != 1 || list[0].Cols != 100 || list[0].Rows != 30 || list[0].Clients != 1 || !list[0].Running {
		t.Fatalf("sessions after a WebSocket without id: %+v", list)
	}
}

func TestResizeSeenBySttyAndBadControlFrames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	s := e.create(t, map[string]any{"cols": 80, "rows": 24})
	c := e.dial(t, "?id="+s.ID, nil)
	c.control(t, `{"type":"resize","cols":132,"rows":43}`)
	c.send(t, "stty size; echo sz-$((1+1))\r")
	c.waitOutput(t, "43 132\r\nsz-2")

	bad := []struct{ frame, want string }{
		{`{"type":"resize","cols":0,"rows":10}`, "cols: must be between 1 and 1000"},
		{`{"type":"resize","cols":1001,"rows":10}`, "cols: must be between 1 and 1000"},
		{`{"type":"resize","cols":80,"rows":0}`, "rows: must be between 1 and 1000"},
		{`{"type":"resize"}`, "cols and rows are required"},
		{`{not json`, "malformed control message"},
		{`{"type":"teleport"}`, `unknown control message type \"teleport\"`},
	}
	for _, b := range bad {
		c.control(t, b.frame)
		ev := c.waitText(t, b.want)
		if !strings.Contains(ev, `"type":"error"`) {
			t.Errorf("%s: answer %s is not an error frame", b.frame, ev)
		}
	}
	// The session carries on at the last good size.
	c.send(t, "stty size; echo sz-$((2+2))\r")
	c.waitOutput(t, "43 132\r\nsz-4")
	if info, _ := e.session(t, s.ID); info.Cols != 132 || info.Rows != 43 || !info.Running {
		t.Fatalf("session after bad frames: %+v", info)
	}
}

func TestCtrlCInterruptsSleep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	s := e.create(t, nil)
	c := e.dial(t, "?id="+s.ID, nil)
	c.send(t, "sleep 600\r")
	eventually(t, "sleep to start", func() bool { return hasChild(s.PID, "sleep") })
	c.send(t, "\x03")
	c.send(t, "echo code-$?-$((3+4))\r")
	c.waitOutput(t, "code-130-7")
	if hasChild(s.PID, "sleep") {
		t.Fatal("sleep still running after Ctrl-C")
	}
}

func TestTwoClientsSeeTheSameBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	s := e.create(t, nil)
	a := e.dial(t, "?id="+s.ID, nil)
	b := e.dial(t, "?id="+s.ID, nil)
	eventually(t, "two clients", func() bool { i, _ := e.session(t, s.ID); return i.Clients == 2 })
	a.send(t, "for i in $(seq 1 3000); do echo line-$i; done; echo end-$((1+1))\r")
	a.waitOutput(t, "end-2")
	b.waitOutput(t, "end-2")
	cut := func(out string) string {
		i := strings.Index(out, "line-1\r\n")
		j := strings.Index(out, "end-2")
		if i < 0 || j < i {
			t.Fatalf("markers missing in %q", out[max(0, len(out)-300):])
		}
		return out[i:j]
	}
	oa, ob := cut(a.output()), cut(b.output())
	if oa != ob {
		t.Fatalf("clients saw different bytes: %d vs %d", len(oa), len(ob))
	}
	if n := strings.Count(oa, "\r\n"); n != 3000 {
		t.Fatalf("want 3000 lines, got %d", n)
	}
}

func TestReattachReplaysAndReadEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	s := e.create(t, map[string]any{"cols": 90, "rows": 20})
	c := e.dial(t, "?id="+s.ID, nil)
	c.send(t, "echo replay-$((5*5))\r")
	c.waitOutput(t, "replay-25")
	c.conn.Close()
	eventually(t, "client to detach", func() bool { i, _ := e.session(t, s.ID); return i.Clients == 0 })
	if i, _ := e.session(t, s.ID); !i.Running {
		t.Fatal("session ended when its only client left")
	}

	again := e.dial(t, "?id="+s.ID, nil)
	again.waitOutput(t, "replay-25")
	again.send(t, "echo more-$((6*7))\r")
	again.waitOutput(t, "more-42")

	code, hist, hdr := e.do(t, http.MethodGet, "/api/v1/terminal/history/"+s.ID, nil)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") || !bytes.Contains(hist, []byte("replay-25")) {
		t.Fatalf("history: %d %s %q", code, hdr.Get("Content-Type"), hist)
	}
	code, stripped, _ := e.do(t, http.MethodGet, "/api/v1/terminal/history/"+s.ID+"?strip=true", nil)
	if code != 200 || bytes.ContainsAny(stripped, "\x1b\r") || !bytes.Contains(stripped, []byte("more-42\n")) {
		t.Fatalf("stripped history: %d %q", code, stripped)
	}

	code, raw, hdr := e.do(t, http.MethodGet, "/api/v1/terminal/raw?id="+s.ID, nil)
	next, _ := strconv.Atoi(hdr.Get("X-Terminal-Next"))
	if code != 200 || next != len(raw) || hdr.Get("X-Terminal-Offset") != "0" || !bytes.Contains(raw, []byte("more-42")) {
		t.Fatalf("raw: %d next=%d len=%d", code, next, len(raw))
	}
	again.send(t, "echo tail-$((8*8))\r")
	again.waitOutput(t, "tail-64")
	eventually(t, "raw since to show new output", func() bool {
		_, tail, _ := e.do(t, http.MethodGet, "/api/v1/terminal/raw?id="+s.ID+"&since="+strconv.Itoa(next), nil)
		return bytes.Contains(tail, []byte("tail-64")) && !bytes.Contains(tail, []byte("more-42"))
	})

	code, txt, _ := e.do(t, http.MethodGet, "/api/v1/terminal/screenshot?id="+s.ID+"&format=text", nil)
	if code != 200 || !strings.Contains(string(txt), "tail-64") || strings.Count(string(txt), "\n") != 20 {
		t.Fatalf("text screenshot: %d %q", code, txt)
	}
	code, img, hdr := e.do(t, http.MethodGet, "/api/v1/terminal/screenshot?id="+s.ID, nil)
	if code != 200 || hdr.Get("Content-Type") != "image/png" {
		t.Fatalf("png screenshot: %d %s", code, hdr.Get("Content-Type"))
	}
	pic, err := png.Decode(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	if b := pic.Bounds(); b.Dx() != 90*7 || b.Dy() != 20*13 {
		t.Fatalf("png is %v, want 630x260", b)
	}
}

// The slow client reads nothing while 23 MB stream out; it must be dropped
// with 1008 while the fast one receives every line, in order. The queue
// bound (4 MiB) leaves a busy machine room to schedule the fast reader; the
// slow one's kernel buffers soak up a few MB before its queue fills.
func TestSlowClientDroppedFastClientGetsEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"client_queue": "4194304", "drop_grace": "60s"}, nil)
	s := e.create(t, nil)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("ps", "-o", "pid,ppid,stat,wchan:32,comm", "--ppid", strconv.Itoa(s.PID)).CombinedOutput()
			t.Logf("shell's children:\n%s", out)
		}
	})
	fast := e.dial(t, "?id="+s.ID, nil)

	// A small receive buffer so the kernel soaks up little of the output.
	d := websocket.Dialer{NetDialContext: (&net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16384) })
	}}).DialContext}
	sc, _, err := d.Dial(e.wsURL("?id="+s.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	slow := startClient(t, sc, false)
	eventually(t, "two clients", func() bool { i, _ := e.session(t, s.ID); return i.Clients == 2 })

	const n = 3000000
	fast.send(t, "seq 1 "+strconv.Itoa(n)+"; echo seq-$((2+3))\r")
	eventually(t, "slow client to be dropped", func() bool { i, _ := e.session(t, s.ID); return i.Clients == 1 })
	// Now the slow one reads: it gets what was sent before the drop, then 1008.
	slow.start()
	fast.waitOutput(t, "seq-5")

	// Every number, in order, exactly once.
	want := 1
	sc2 := bufio.NewScanner(strings.NewReader(fast.output()))
	for sc2.Scan() {
		line := strings.TrimSuffix(sc2.Text(), "\r")
		if i := strings.LastIndexByte(line, '\r'); i >= 0 {
			line = line[i+1:] // after the prompt's escape sequences
		}
		v, err := strconv.Atoi(line)
		if err != nil {
			continue
		}
		if v != want {
			out := fast.output()
			i := strings.Index(out, "\n"+line+"\r")
			t.Fatalf("fast client: got %d, want %d: %q", v, want, out[max(0, i-200):i+20])
		}
		want++
	}
	if want != n+1 {
		t.Fatalf("fast client got %d of %d lines", want-1, n)
	}

	err = slow.waitClosed(t)
	if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Fatalf("slow client closed with %v, want 1008", err)
	}
	// The session is unharmed.
	fast.send(t, "echo still-$((9*9))\r")
	fast.waitOutput(t, "still-81")
}

func TestExitCodeDeliveredBeforeClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	s := e.create(t, nil)
	c := e.dial(t, "?id="+s.ID, nil)
	c.send(t, "echo bye-$((1+1)); exit 7\r")
	err := c.waitClosed(t)
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("close: %v", err)
	}
	out := c.output()
	ev := c.texts()
	if len(ev) != 1 || !strings.HasSuffix(ev[0], `{"type":"exit","code":7}`) {
		t.Fatalf("text frames: %q", ev)
	}
	if !strings.Contains(out, "bye-2") || ev[0] != "after:"+strconv.Itoa(len(out))+` {"type":"exit","code":7}` {
		t.Fatalf("exit frame must follow all output: %q / %q", ev, out[max(0, len(out)-100):])
	}
	info, ok := e.session(t, s.ID)
	if !ok || info.Running || info.ExitCode == nil || *info.ExitCode != 7 || info.ExitedAt == nil {
		t.Fatalf("ended session: %+v", info)
	}
	if alive(s.PID) {
		t.Fatal("shell not reaped")
	}
	// A client attaching to the ended session gets the scrollback, the exit and a close.
	late := e.dial(t, "?id="+s.ID, nil)
	if err := late.waitClosed(t); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("late close: %v", err)
	}
	if !strings.Contains(late.output(), "bye-2") || len(late.texts()) != 1 {
		t.Fatalf("late client: %q %q", late.output(), late.texts())
	}
	code, body, _ := e.do(t, http.MethodDelete, "/api/v1/terminal/"+s.ID, nil)
	if code != 200 || !strings.Contains(string(body), `"exit_code":7`) {
		t.Fatalf("delete ended: %d %s", code, body)
	}
	if _, ok := e.session(t, s.ID); ok {
		t.Fatal("deleted session still listed")
	}
}

func TestDeleteHangsUpAndTellsClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"kill_grace": "200ms"}, nil)
	s := e.create(t, nil)
	c := e.dial(t, "?id="+s.ID, nil)
	// A shell that ignores SIGHUP still goes, after the grace period.
	c.send(t, "trap '' HUP; echo trapped-$((2*2))\r")
	c.waitOutput(t, "trapped-4")
	code, body, _ := e.do(t, http.MethodDelete, "/api/v1/terminal/"+s.ID, nil)
	if code != 200 || !strings.Contains(string(body), `"exit_code":137`) {
		t.Fatalf("delete: %d %s", code, body)
	}
	if alive(s.PID) {
		t.Fatal("shell still alive after delete")
	}
	if err := c.waitClosed(t); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("client close: %v", err)
	}
	if ev := c.texts(); len(ev) != 1 || !strings.HasSuffix(ev[0], `{"type":"exit","code":137}`) {
		t.Fatalf("client frames: %q", ev)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil) // its policy allows https://app.example.com
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("\x00\x01not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code, msg          string
	}{
		{"missing shell", "POST", "/api/v1/terminal/create", map[string]any{"shell": "/no/such/shell"}, 400, "INVALID", "shell: /no/such/shell does not exist"},
		{"shell not in PATH", "POST", "/api/v1/terminal/create", map[string]any{"shell": "no-such-shell-xyz"}, 400, "INVALID", "not found in PATH"},
		{"shell not executable", "POST", "/api/v1/terminal/create", map[string]any{"shell": plain}, 400, "INVALID", "not executable"},
		{"shell is a directory", "POST", "/api/v1/terminal/create", map[string]any{"shell": "/tmp"}, 400, "INVALID", "is a directory"},
		{"shell cannot exec", "POST", "/api/v1/terminal/create", map[string]any{"shell": garbage}, 400, "SHELL_START_FAILED", "not an executable the system can run"},
		{"bad cwd", "POST", "/api/v1/terminal/create", map[string]any{"cwd": "/no/such/dir"}, 400, "INVALID", "cwd: /no/such/dir is not an existing directory"},
		{"cols zero", "POST", "/api/v1/terminal/create", map[string]any{"cols": 0}, 400, "INVALID", "cols: must be between 1 and 1000"},
		{"rows too big", "POST", "/api/v1/terminal/create", map[string]any{"rows": 1001}, 400, "INVALID", "rows: must be between 1 and 1000"},
		{"cols not a number", "POST", "/api/v1/terminal/create", `{"cols":"wide"}`, 400, "INVALID", "cols: must be an integer"},
		{"bad env name", "POST", "/api/v1/terminal/create", map[string]any{"env": map[string]string{"A=B": "x"}}, 400, "INVALID", "env:"},
		{"unknown field", "POST", "/api/v1/terminal/create", map[string]any{"colour": 1}, 400, "INVALID", "colour: unknown field"},
		{"malformed body", "POST", "/api/v1/terminal/create", `{"cols":`, 400, "INVALID", "body:"},
		{"delete unknown", "DELETE", "/api/v1/terminal/nope", nil, 404, "NOT_FOUND", `"nope" not found`},
		{"history unknown", "GET", "/api/v1/terminal/history/nope", nil, 404, "NOT_FOUND", "not found"},
		{"session unknown", "GET", "/api/v1/terminal/sessions/nope", nil, 404, "NOT_FOUND", "not found"},
		{"raw without id", "GET", "/api/v1/terminal/raw", nil, 400, "INVALID", "id: is required"},
		{"raw unknown", "GET", "/api/v1/terminal/raw?id=nope", nil, 404, "NOT_FOUND", "not found"},
		{"screenshot unknown", "GET", "/api/v1/terminal/screenshot?id=nope", nil, 404, "NOT_FOUND", "not found"},
		{"ws without upgrade", "GET", "/api/v1/terminal/ws", nil, 400, "BAD_REQUEST", "needs a WebSocket upgrade"},
		{"asset unknown", "GET", "/assets/nope.js", nil, 404, "NOT_FOUND", "not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, b, _ := e.do(t, tc.method, tc.path, tc.body)
			var body fault.ContainerError
			_ = json.Unmarshal(b, &body)
			if status != tc.status || body.Code != tc.code || !strings.Contains(body.Message, tc.msg) {
				t.Fatalf("%d %s, want %d %s containing %q", status, b, tc.status, tc.code, tc.msg)
			}
		})
	}
	if n := len(e.sessions(t)); n != 0 {
		t.Fatalf("bad requests left %d sessions", n)
	}

	s := e.create(t, nil)
	for _, tc := range []struct {
		name, path string
		code       string
	}{
		{"since negative", "/api/v1/terminal/raw?id=" + s.ID + "&since=-1", "INVALID"},
		{"since past end", "/api/v1/terminal/raw?id=" + s.ID + "&since=999999999", "INVALID"},
		{"screenshot format", "/api/v1/terminal/screenshot?id=" + s.ID + "&format=gif", "INVALID"},
		{"history strip", "/api/v1/terminal/history/" + s.ID + "?strip=maybe", "INVALID"},
	} {
		status, b, _ := e.do(t, http.MethodGet, tc.path, nil)
		if status != 400 || !strings.Contains(string(b), tc.code) {
			t.Errorf("%s: %d %s", tc.name, status, b)
		}
	}
	// The query grammar is the platform's, checked before the handler:
	// every refusal names the parameter. (The old handlers took strip= as
	// false and never saw a repeated parameter.)
	for _, tc := range []struct{ path, param string }{
		{"/api/v1/terminal/history/" + s.ID + "?strip=", "strip"},
		{"/api/v1/terminal/history/" + s.ID + "?strip=yes", "strip"},
		{"/api/v1/terminal/raw?id=" + s.ID + "&since=1&since=2", "since"},
		{"/api/v1/terminal/raw?id=" + s.ID + "&since=ten", "since"},
		{"/api/v1/terminal/raw?since=0", "id"},
		{"/api/v1/terminal/screenshot?id=" + s.ID + "&format=TEXT", "format"},
		{"/api/v1/terminal/screenshot?id=", "id"},
	} {
		status, b, _ := e.do(t, http.MethodGet, tc.path, nil)
		var body fault.ContainerError
		if status != 400 || json.Unmarshal(b, &body) != nil || body.Code != "INVALID" || body.Details != tc.param ||
			!strings.Contains(body.Message, "query parameter "+tc.param) {
			t.Errorf("%s: %d %s, want 400 INVALID naming %s", tc.path, status, b, tc.param)
		}
	}
	for _, path := range []string{"/api/v1/terminal/history/" + s.ID + "?strip=1", "/api/v1/terminal/raw?id=" + s.ID + "&since=0",
		"/api/v1/terminal/screenshot?id=" + s.ID + "&format=text"} {
		if status, b, _ := e.do(t, http.MethodGet, path, nil); status != 200 {
			t.Errorf("%s: %d %s", path, status, b)
		}
	}

	// WebSocket handshakes that must fail before any upgrade.
	for _, tc := range []struct {
		name, query, origin string
		status              int
		code                string
	}{
		{"unknown session", "?id=nope", "", 404, "NOT_FOUND"},
		{"cols zero", "?cols=0&rows=10", "", 400, "INVALID"},
		{"cols huge", "?cols=5000&rows=10", "", 400, "INVALID"},
		{"bad shell", "?shell=/no/such/shell", "", 400, "INVALID"},
		{"foreign origin", "?id=" + s.ID, "https://evil.example.net", 403, "FORBIDDEN"},
		{"loopback origin on another port", "?id=" + s.ID, "http://127.0.0.1:9", 403, "FORBIDDEN"},
		{"localhost on another port", "?id=" + s.ID, "http://localhost:1234", 403, "FORBIDDEN"},
		{"a name under localhost on another port", "?id=" + s.ID, "http://evil.localhost", 403, "FORBIDDEN"},
	} {
		hdr := http.Header{}
		if tc.origin != "" {
			hdr.Set("Origin", tc.origin)
		}
		conn, resp, err := websocket.DefaultDialer.Dial(e.wsURL(tc.query), hdr)
		if err == nil {
			conn.Close()
			t.Errorf("%s: upgrade succeeded", tc.name)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || !strings.Contains(string(b), `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b)
		}
	}
	// Refusals before gorilla's upgrade and gorilla's own all carry the
	// service's error body, naming what was wrong.
	for _, tc := range []struct {
		name, query string
		hdr         []string
		code        string
		details     string
	}{
		{"not an upgrade", "?id=" + s.ID, nil, "BAD_REQUEST", ""},
		{"cols not an integer", "?cols=wide&rows=10", []string{"Upgrade", "websocket", "Connection", "Upgrade"}, "INVALID", "cols"},
		{"rows given twice", "?cols=80&rows=10&rows=20", []string{"Upgrade", "websocket", "Connection", "Upgrade"}, "INVALID", "rows"},
		{"handshake without a key", "?id=" + s.ID, []string{"Upgrade", "websocket", "Connection", "Upgrade", "Sec-WebSocket-Version", "13"}, "BAD_REQUEST", ""},
	} {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/api/v1/terminal/ws"+tc.query, nil)
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			req.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		resp, err := e.http.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var body fault.ContainerError
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 400 || body.Code != tc.code || body.Details != tc.details || body.Message == "" ||
			resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s: %d %s %+v (%v)", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body, err)
		}
	}
	// Allowed origins: same origin and the configured list.
	for _, origin := range []string{"https://app.example.com", e.url} {
		hdr := http.Header{"Origin": {origin}}
		conn, _, err := websocket.DefaultDialer.Dial(e.wsURL("?id="+s.ID), hdr)
		if err != nil {
			t.Errorf("origin %s refused: %v", origin, err)
			continue
		}
		conn.Close()
	}
	if n := len(e.sessions(t)); n != 1 {
		t.Fatalf("failed handshakes left sessions: %d", n)
	}
}

func TestIdleSessionsEnd(t *testing.T) {
	t.Parallel()
	clock := clockpkg.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, map[string]string{"idle_timeout": "1m"}, clock)
	idle := e.create(t, nil)
	busy := e.create(t, nil)
	c := e.dial(t, "?id="+busy.ID, nil)
	c.send(t, "echo here-$((1+2))\r")
	c.waitOutput(t, "here-3")
	clock.Advance(2 * time.Minute)
	eventually(t, "idle session to end", func() bool { _, ok := e.session(t, idle.ID); return !ok && !alive(idle.PID) })
	if _, ok := e.session(t, busy.ID); !ok {
		t.Fatal("a session with a client was ended as idle")
	}
	c.send(t, "echo alive-$((2+3))\r")
	c.waitOutput(t, "alive-5")
}

func TestWebPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	code, b, hdr := e.do(t, http.MethodGet, "/", nil)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(b), "assets/xterm.js") {
		t.Fatalf("index: %d %s", code, hdr.Get("Content-Type"))
	}
	if strings.Contains(string(b), `src="/`) || strings.Contains(string(b), `href="/`) {
		t.Fatal("the page must use relative URLs to work under the gateway prefix")
	}
	if hdr.Get("Cache-Control") != "no-cache" {
		t.Errorf("index Cache-Control = %q", hdr.Get("Cache-Control"))
	}
	for name, ctype := range map[string]string{"xterm.js": "text/javascript", "xterm.css": "text/css", "addon-fit.js": "text/javascript",
		"app.js": "text/javascript", "style.css": "text/css", "favicon.svg": "image/svg+xml"} {
		code, b, hdr := e.do(t, http.MethodGet, "/assets/"+name, nil)
		if code != 200 || len(b) == 0 || hdr.Get("Cache-Control") != "public, max-age=3600" || hdr.Get("Vary") != "Accept-Encoding" ||
			!strings.HasPrefix(hdr.Get("Content-Type"), ctype) {
			t.Errorf("asset %s: %d %v", name, code, hdr)
		}
	}
	// Asked for gzip itself, the client gets the compressed bytes as they are.
	req, _ := http.NewRequest(http.MethodGet, e.url+"/assets/app.js", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil || resp.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("gzip asset: %v %v", err, resp.Header)
	}
	if js, err := io.ReadAll(zr); err != nil || len(js) == 0 {
		t.Fatalf("gzip asset body: %d bytes, %v", len(js), err)
	}
	resp.Body.Close()
}

// Sequential on purpose: it counts this process's fds and children.
func TestHundredSessionsLeakNothing(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.do(t, http.MethodGet, "/health", nil)
	time.Sleep(50 * time.Millisecond)
	fds0, kids0 := countFDs(t), len(children(t))

	ids := make([]string, 0, 100)
	pids := make([]int, 0, 100)
	for i := 0; i < 100; i++ {
		s := e.create(t, map[string]any{"shell": "/bin/sh"})
		ids, pids = append(ids, s.ID), append(pids, s.PID)
		if i%10 == 0 {
			c := e.dial(t, "?id="+s.ID, nil)
			c.send(t, "echo n-$((i=7*6))\n")
			c.waitOutput(t, "n-42")
			c.conn.Close()
			<-c.done
		}
	}
	if got := len(children(t)) - kids0; got != 100 {
		t.Fatalf("%d shells running, want 100", got)
	}
	for _, id := range ids {
		if code, b, _ := e.do(t, http.MethodDelete, "/api/v1/terminal/"+id, nil); code != 200 {
			t.Fatalf("delete: %d %s", code, b)
		}
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Fatalf("shell %d survived its delete (zombie or running)", pid)
		}
	}
	eventually(t, "fds back to the baseline", func() bool { return countFDs(t) <= fds0 })
	if k := children(t); len(k) != kids0 {
		t.Fatalf("children left: %v", k)
	}
	if n := len(e.sessions(t)); n != 0 {
		t.Fatalf("%d sessions still listed", n)
	}
}

// Sequential: it counts children.
func TestCloseEndsEverySession(t *testing.T) {
	e := newEnv(t, nil, nil)
	kids0 := len(children(t))
	var pids []int
	for i := 0; i < 3; i++ {
		pids = append(pids, e.create(t, nil).PID)
	}
	c := e.dial(t, "?id="+e.sessions(t)[0].ID, nil)
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Fatalf("shell %d alive after Close", pid)
		}
	}
	if len(children(t)) != kids0 {
		t.Fatal("children left after Close")
	}
	if err := c.waitClosed(t); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("client close: %v", err)
	}
}

// Sequential: it sets the environment.
func TestOptionsFromEnvironment(t *testing.T) {
	t.Setenv("DECKHAND_TERMINAL_MAX_SESSIONS", "1")
	e := newEnv(t, nil, nil)
	e.create(t, nil)
	code, b, _ := e.do(t, http.MethodPost, "/api/v1/terminal/create", map[string]any{"shell": "/bin/sh"})
	if code != http.StatusTooManyRequests || !strings.Contains(string(b), "at most 1 terminal sessions") {
		t.Fatalf("second session over max_sessions=1: %d %s", code, b)
	}
	// An option the agent passes wins over the environment.
	e2 := newEnv(t, map[string]string{"max_sessions": "2"}, nil)
	e2.create(t, nil)
	e2.create(t, nil)
}

func TestPingDropsDeadClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"ping_interval": "200ms"}, nil)
	s := e.create(t, nil)
	live := e.dial(t, "?id="+s.ID, nil) // reads, so gorilla answers pings
	conn, _, err := websocket.DefaultDialer.Dial(e.wsURL("?id="+s.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	startClient(t, conn, false) // never reads: never answers a ping
	eventually(t, "two clients", func() bool { i, _ := e.session(t, s.ID); return i.Clients == 2 })
	eventually(t, "the silent client to be dropped", func() bool { i, _ := e.session(t, s.ID); return i.Clients == 1 })
	live.send(t, "echo pong-$((7+7))\r")
	live.waitOutput(t, "pong-14")
	if i, _ := e.session(t, s.ID); i.Clients != 1 || !i.Running {
		t.Fatalf("after the drop: %+v", i)
	}
}

func TestScrollbackIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"scrollback": "4096"}, nil)
	s := e.create(t, nil)
	c := e.dial(t, "?id="+s.ID, nil)
	c.send(t, "seq 1 5000; echo done-$((3*3))\r")
	c.waitOutput(t, "done-9")
	eventually(t, "output to reach the ring", func() bool {
		_, b, _ := e.do(t, http.MethodGet, "/api/v1/terminal/history/"+s.ID, nil)
		return bytes.Contains(b, []byte("done-9"))
	})
	code, raw, hdr := e.do(t, http.MethodGet, "/api/v1/terminal/raw?id="+s.ID+"&since=0", nil)
	first, _ := strconv.Atoi(hdr.Get("X-Terminal-Offset"))
	next, _ := strconv.Atoi(hdr.Get("X-Terminal-Next"))
	if code != 200 || len(raw) != 4096 || hdr.Get("X-Terminal-Truncated") != "true" || first == 0 || next != first+4096 {
		t.Fatalf("raw of a cut ring: %d len=%d %v", code, len(raw), hdr)
	}
	// The ring no longer holds what drew the screen: a new client gets a
	// redraw of the screen model, which shows what the screenshot shows.
	late := e.dial(t, "?id="+s.ID, nil)
	late.waitOutput(t, "done-9")
	eventually(t, "the late client's screen to match the screenshot", func() bool {
		shot, _ := e.screenText(t, s.ID)
		return vtText(replayed(late.output(), 80, 24)) == shot
	})
	if out := late.output(); !strings.HasPrefix(out, "\x1bc") || strings.Contains(out, "\r\n4000\r\n") {
		t.Fatalf("attach to a cut ring: %d bytes starting %q, want a redraw", len(out), out[:min(len(out), 40)])
	}
}
