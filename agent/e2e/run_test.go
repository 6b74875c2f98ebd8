package e2e_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"gopkg.in/yaml.v3"

	"deckhand/agent"
	"deckhand/platform/platformtest"
)

// TestAgentServes starts one default agent and checks every service, the
// gateway and `deckhand status` against it.
func TestAgentServes(t *testing.T) {
	t.Parallel()
	a := start(t)
	st := a.ready(t)
	agentPID := a.cmd.Process.Pid
	if st.Agent.PID != agentPID || st.Agent.Version != binVersion || st.Agent.Data != a.data {
		t.Fatalf("agent status %+v", st.Agent)
	}
	var names []string
	for _, s := range st.Services {
		names = append(names, s.Name)
	}
	if !reflect.DeepEqual(names, agent.Registered()) {
		t.Fatalf("running %v, want every registered service %v", names, agent.Registered())
	}

	for _, s := range st.Services {
		name := s.Name
		direct := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(agent.Port(a.base, name)))
		if s.Address != strings.TrimPrefix(direct, "http://") || s.Mode != agent.ModeInProcess || s.PID != agentPID {
			t.Fatalf("%s status %+v", name, s)
		}
		t.Run(name+"/health", func(t *testing.T) {
			for _, url := range []string{direct + "/health", "http://" + a.gw + "/_/" + name + "/health"} {
				// The first call leaves its user agent; the second reports it.
				get(t, url, "User-Agent", "e2e-probe/"+name)
				status, m, raw := get(t, url, "User-Agent", "e2e-probe/"+name)
				if status != 200 {
					t.Fatalf("%s: %d %s", url, status, raw)
				}
				checkHealth(t, raw, m, name, wantHealth(name), agentPID, "e2e-probe/"+name)
			}
		})
		t.Run(name+"/openapi", func(t *testing.T) {
			status, doc, raw := get(t, direct+"/openapi.json")
			if status != 200 || doc["openapi"] != "3.0.3" {
				t.Fatalf("openapi.json %d %.200s", status, raw)
			}
			info, _ := doc["info"].(map[string]any)
			if info["title"] == "" || info["version"] != binVersion || info["description"] == "" {
				t.Fatalf("info %v", info)
			}
			paths, _ := doc["paths"].(map[string]any)
			for _, p := range []string{"/health", "/openapi.json", "/openapi.yaml"} {
				if paths[p] == nil {
					t.Fatalf("%s missing from %s's document", p, name)
				}
			}
			req, _ := http.NewRequest(http.MethodGet, direct+"/openapi.yaml", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var y map[string]any
			if err := yaml.NewDecoder(resp.Body).Decode(&y); err != nil || resp.StatusCode != 200 {
				t.Fatalf("openapi.yaml %d %v", resp.StatusCode, err)
			}
			// Same document in both encodings.
			yj, _ := json.Marshal(y)
			var back map[string]any
			_ = json.Unmarshal(yj, &back)
			if !reflect.DeepEqual(back, doc) {
				t.Fatal("openapi.yaml and openapi.json differ")
			}
		})
	}

	t.Run("files version", func(t *testing.T) {
		out, err := deckhand(t, nil, "version")
		if err != nil || !strings.HasPrefix(out, "deckhand "+binVersion) {
			t.Fatalf("deckhand version: %q %v", out, err)
		}
		for _, url := range []string{
			"http://127.0.0.1:" + strconv.Itoa(agent.Port(a.base, "files")) + "/api/v1/version",
			"http://" + a.gw + "/_/files/api/v1/version",
		} {
			status, m, raw := get(t, url)
			if status != 200 || len(m) != 2 || m["server_version"] != binVersion || m["version"] != "v1" {
				t.Fatalf("%s: %d %s", url, status, raw)
			}
		}
	})

	t.Run("gateway routing", func(t *testing.T) {
		cases := []struct {
			name, path, host string
			status           int
			check            func(map[string]any) bool
		}{
			{"path", "/_/cron/health", "", 200, func(m map[string]any) bool { return m["service"] == "cron" }},
			{"host", "/api/v1/version", "p1-c1-files-1.srv.localhost", 200, func(m map[string]any) bool { return m["version"] == "v1" }},
			{"host with port", "/health", "p1-c1-cron-1.srv.localhost:" + strconv.Itoa(a.base), 200, func(m map[string]any) bool { return m["service"] == "cron" }},
			{"unknown service", "/_/nosuch/health", "", 404, hasCode("NOT_FOUND")},
			{"no service", "/health", "", 404, hasCode("NOT_FOUND")},
			{"service's own error", "/_/files/api/v1/nope", "", 404, hasCode("NOT_FOUND")},
		}
		for _, tc := range cases {
			status, m, raw := get(t, "http://"+a.gw+tc.path, "Host", tc.host)
			if status != tc.status || !tc.check(m) {
				t.Errorf("%s: GET %s Host %q: %d %s", tc.name, tc.path, tc.host, status, raw)
			}
		}
	})

	t.Run("websocket through the gateway", func(t *testing.T) {
		if _, ok := agent.Lookup("terminal"); !ok {
			t.Skip("no WebSocket service is registered yet; agent/gateway TestWebSocketPassesThrough covers pass-through with an upstream echo")
		}
		// /bin/sh keeps the user's rc files (and their start-up time) out.
		resp, err := client.Post("http://"+a.gw+"/_/terminal/api/v1/terminal/create", "application/json",
			strings.NewReader(`{"shell":"/bin/sh","cols":80,"rows":24}`))
		if err != nil {
			t.Fatal(err)
		}
		var created struct {
			ID string `json:"id"`
		}
		err = json.NewDecoder(resp.Body).Decode(&created)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusCreated || created.ID == "" {
			t.Fatalf("create through the gateway: %d %v", resp.StatusCode, err)
		}
		u := "ws://" + a.gw + "/_/terminal/api/v1/terminal/ws?id=" + created.ID
		c, wsResp, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			t.Fatalf("dial %s: %v %v", u, err, wsResp)
		}
		defer c.Close()
		if wsResp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade answered %d", wsResp.StatusCode)
		}
		// A shell may discard input typed before it is ready (readline
		// flushes the tty), so the command is sent again until it answers.
		output := make(chan []byte, 64)
		go func() {
			defer close(output)
			for {
				mt, msg, err := c.ReadMessage()
				if err != nil {
					return
				}
				if mt == websocket.BinaryMessage {
					output <- msg
				}
			}
		}()
		var seen strings.Builder
		deadline := time.After(20 * time.Second) // hang guard
		resend := time.NewTicker(time.Second)
		defer resend.Stop()
		send := func() {
			if err := c.WriteMessage(websocket.BinaryMessage, []byte("echo gateway-$((40+2))\n")); err != nil {
				t.Fatal(err)
			}
		}
		send()
		for !strings.Contains(seen.String(), "gateway-42") {
			select {
			case msg, ok := <-output:
				if !ok {
					t.Fatalf("connection closed; got %q", seen.String())
				}
				seen.Write(msg)
			case <-resend.C:
				send()
			case <-deadline:
				t.Fatalf("no answer through the gateway; got %q", seen.String())
			}
		}
	})

	t.Run("deckhand status", func(t *testing.T) {
		out, err := deckhand(t, nil, "status", "--json", "--listen", a.gw)
		if err != nil {
			t.Fatalf("status --json: %v %s", err, out)
		}
		var got agent.Status
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("status --json is not JSON: %v %s", err, out)
		}
		if got.Agent.PID != agentPID || len(got.Services) != len(names) {
			t.Fatalf("status %+v", got)
		}
		for i, s := range got.Services {
			if s.Name != names[i] || s.State != wantState(s.Name) || s.PID != agentPID || s.Address == "" ||
				s.Health == nil || s.Health.Service != s.Name || s.UptimeSeconds <= 0 || s.Restarts != 0 {
				t.Fatalf("service status %+v", s)
			}
		}
		out, err = deckhand(t, nil, "status", "--listen", a.gw)
		if err != nil || !strings.Contains(out, "NAME") || !strings.Contains(out, "STATE") {
			t.Fatalf("status: %v %s", err, out)
		}
		for _, n := range names {
			if !strings.Contains(out, n+" ") || !strings.Contains(out, "running") {
				t.Fatalf("status table lacks %s: %s", n, out)
			}
		}
		if out, err := deckhand(t, nil, "status", "--listen", "127.0.0.1:1"); err == nil || !strings.Contains(out, "no agent answers") {
			t.Fatalf("status against nothing: %v %s", err, out)
		}
	})
}

// wantHealth is a service's /health status in these tests: the display
// service (once registered) has no X display here and says so.
func wantHealth(name string) string {
	if name == "display" {
		return "unavailable"
	}
	return "ok"
}

func wantState(name string) string {
	if name == "display" {
		return agent.StateUnavailable
	}
	return agent.StateRunning
}

func hasCode(code string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		_, d := m["details"]
		msg, _ := m["message"].(string)
		return m["code"] == code && d && msg != ""
	}
}

// checkHealth verifies every field of the health record.
func checkHealth(t *testing.T, raw []byte, m map[string]any, service, status string, pid int, ua string) {
	t.Helper()
	for _, k := range []string{"built", "fds", "ip", "memory", "pid", "service", "started", "status", "user_agent"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("health lacks %q: %s", k, raw)
		}
	}
	var h struct {
		Built  *string `json:"built"`
		FDs    *int    `json:"fds"`
		IP     string  `json:"ip"`
		Memory *struct {
			Heap *uint64 `json:"heap"`
			RSS  *uint64 `json:"rss"`
		} `json:"memory"`
		PID       int     `json:"pid"`
		Service   string  `json:"service"`
		Started   string  `json:"started"`
		Status    string  `json:"status"`
		UserAgent *string `json:"user_agent"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("health does not decode: %v %s", err, raw)
	}
	if h.Service != service || h.Status != status || h.PID != pid || h.IP != "127.0.0.1" {
		t.Fatalf("health identity wrong: %s", raw)
	}
	// fds and memory are measured from /proc of the serving process.
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if h.FDs == nil || *h.FDs < 3 || *h.FDs > len(fds)+16 {
		t.Fatalf("fds %v, the process has %d: %s", h.FDs, len(fds), raw)
	}
	rss := vmRSS(pid)
	if h.Memory == nil || h.Memory.Heap == nil || h.Memory.RSS == nil || *h.Memory.Heap == 0 ||
		*h.Memory.RSS < rss/4 || *h.Memory.RSS > rss*4 {
		t.Fatalf("memory not measured (process VmRSS %d): %s", rss, raw)
	}
	started, err := time.Parse(time.RFC3339Nano, h.Started)
	if err != nil || started.After(time.Now()) || time.Since(started) > time.Hour {
		t.Fatalf("started %q: %v", h.Started, err)
	}
	if h.UserAgent == nil || *h.UserAgent != ua {
		t.Fatalf("user_agent %v, want %q", h.UserAgent, ua)
	}
}

// TestEnvironmentAndFlags: a DECKHAND_* variable beats the default, a flag
// beats the variable, for `run` and `status` alike.
func TestEnvironmentAndFlags(t *testing.T) {
	t.Parallel()
	t.Run("env beats default", func(t *testing.T) {
		t.Parallel()
		base := freeBase(t)
		gw := "127.0.0.1:" + strconv.Itoa(base)
		data := t.TempDir()
		env := []string{"DECKHAND_DATA=" + data, "DECKHAND_LISTEN=" + gw, "DECKHAND_PORT_BASE=" + strconv.Itoa(base),
			"DECKHAND_SERVICES=files", "DECKHAND_LOG_LEVEL=warn", "DECKHAND_PROJECT_ID=proj", "DECKHAND_CONTAINER_ID=ctr-1"}
		a := startRaw(t, env, gw, base, data, "run")
		st := a.ready(t)
		if len(st.Services) != 1 || st.Services[0].Name != "files" || st.Services[0].Address != "127.0.0.1:"+strconv.Itoa(base+2) || st.Agent.Data != data {
			t.Fatalf("status %+v", st)
		}
		if _, err := os.Stat(data + "/agent.db"); err != nil {
			t.Fatalf("DECKHAND_DATA ignored: %v", err)
		}
		status, _, raw := get(t, "http://"+gw+"/api/v1/version", "Host", "proj-ctr-1-files-1.srv.localhost")
		if status != 200 {
			t.Fatalf("own host: %d %s", status, raw)
		}
		status, _, raw = get(t, "http://"+gw+"/api/v1/version", "Host", "proj-ctr-2-files-1.srv.localhost")
		if status != 404 {
			t.Fatalf("other container's host: %d %s", status, raw)
		}
		out, err := deckhand(t, []string{"DECKHAND_LISTEN=" + gw}, "status", "--json")
		if err != nil || !strings.Contains(out, `"files"`) {
			t.Fatalf("status with DECKHAND_LISTEN: %v %s", err, out)
		}
	})
	t.Run("flag beats env", func(t *testing.T) {
		t.Parallel()
		envBase, base := freeBase(t), freeBase(t)
		gw := "127.0.0.1:" + strconv.Itoa(base)
		data := t.TempDir()
		env := []string{"DECKHAND_DATA=/nonexistent/never", "DECKHAND_LISTEN=127.0.0.1:" + strconv.Itoa(envBase),
			"DECKHAND_PORT_BASE=" + strconv.Itoa(envBase), "DECKHAND_SERVICES=cron"}
		a := startRaw(t, env, gw, base, data, "run", "--data", data, "--listen", gw, "--port-base", strconv.Itoa(base),
			"--services", "files", "--log-level", "warn")
		st := a.ready(t)
		if len(st.Services) != 1 || st.Services[0].Name != "files" || st.Services[0].Address != "127.0.0.1:"+strconv.Itoa(base+2) {
			t.Fatalf("status %+v", st)
		}
		if conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(envBase+2)); err == nil {
			conn.Close()
			t.Fatal("something listens on the environment's port")
		}
		out, err := deckhand(t, []string{"DECKHAND_LISTEN=127.0.0.1:1"}, "status", "--listen", gw)
		if err != nil || !strings.Contains(out, "files") {
			t.Fatalf("status --listen over env: %v %s", err, out)
		}
	})
}

// A known service this agent was not asked to run is not found through
// the gateway, by path and by Host.
func TestGatewayServiceNotRunning(t *testing.T) {
	t.Parallel()
	a := start(t, "--services", "cron")
	a.ready(t)
	for _, tc := range []struct{ path, host string }{
		{"/_/files/health", ""},
		{"/health", "p1-c1-files-1.srv.localhost"},
	} {
		status, m, raw := get(t, "http://"+a.gw+tc.path, "Host", tc.host)
		if status != 404 || !hasCode("NOT_FOUND")(m) {
			t.Errorf("GET %s Host %q: %d %s", tc.path, tc.host, status, raw)
		}
	}
}

func TestBadConfigurationFailsClearly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--services", "cron,bogus"}, `--services: unknown service "bogus"`},
		{[]string{"run", "--isolate", "crn"}, `--isolate: unknown service "crn"`},
		{[]string{"service", "bogus"}, `unknown service "bogus"`},
		{[]string{"run", "--port-base", "x"}, `invalid argument "x" for "--port-base"`},
	}
	for _, tc := range cases {
		out, err := deckhand(t, []string{"DECKHAND_DATA=" + t.TempDir()}, tc.args...)
		if err == nil || !strings.Contains(out, tc.want) || strings.Contains(out, "goroutine") {
			t.Errorf("deckhand %v: %v %q, want an error with %q", tc.args, err, out, tc.want)
		}
	}
	out, err := deckhand(t, []string{"DECKHAND_PORT_BASE=notanumber"}, "run")
	if err == nil || !strings.Contains(out, "DECKHAND_PORT_BASE") {
		t.Errorf("bad DECKHAND_PORT_BASE: %v %q", err, out)
	}
}

// TestIsolatedChildRestartsAfterSIGKILL kills an isolated service's process
// and expects the supervisor to restart it while the others keep serving.
func TestIsolatedChildRestartsAfterSIGKILL(t *testing.T) {
	t.Parallel()
	a := start(t, "--isolate", "cron")
	st := a.ready(t)
	cron := st.Services[0]
	agentPID := a.cmd.Process.Pid
	if cron.Name != "cron" || cron.Mode != agent.ModeChild || cron.PID == agentPID || cron.PID == 0 || cron.Health.PID != cron.PID {
		t.Fatalf("cron is not a child: %+v", cron)
	}
	if ppid, pgid, _, ok := procInfo(cron.PID); !ok || ppid != agentPID || pgid != cron.PID {
		t.Fatalf("cron child %d: ppid %d pgid %d (agent %d)", cron.PID, ppid, pgid, agentPID)
	}
	if err := syscall.Kill(cron.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	status, m, raw := get(t, "http://"+a.gw+"/_/files/health")
	if status != 200 || m["service"] != "files" {
		t.Fatalf("files stopped serving when cron died: %d %s", status, raw)
	}
	st = a.waitFor(t, "cron restarted", func(s *agent.Status) bool {
		return allRunning(s) && s.Services[0].Restarts >= 1 && s.Services[0].PID != cron.PID
	})
	again := st.Services[0]
	if again.LastError == "" || !strings.Contains(again.LastError, "killed") {
		t.Errorf("restart reason %q does not say the child was killed", again.LastError)
	}
	status, m, raw = get(t, "http://"+a.gw+"/_/cron/health")
	if status != 200 || m["service"] != "cron" || int(m["pid"].(float64)) != again.PID {
		t.Fatalf("restarted cron: %d %s (status pid %d)", status, raw, again.PID)
	}
	if _, _, state, ok := procInfo(cron.PID); ok {
		t.Fatalf("killed child %d still in the process table (state %s)", cron.PID, state)
	}
	// Until the notification service lands, events are the agent's log:
	// one service.crashed event for cron. The crash is journaled too.
	var event bool
	for _, line := range strings.Split(a.out.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["service"] != "cron" {
			continue
		}
		event = event || (rec["event"] == "service.crashed" && rec["pid"] == float64(cron.PID))
	}
	if !event {
		t.Fatalf("no service.crashed event for cron in the agent's log:\n%s", a.out)
	}
	waitJournal(t, a, "source=agent&level=error", "for the crash", func(m map[string]any) bool {
		fields, _ := m["fields"].(map[string]any)
		return fields["service"] == "cron" && fields["pid"] == float64(cron.PID) && strings.Contains(fmt.Sprint(fields["error"]), "killed")
	})
}

// TestSIGTERMStopsEverything: the agent and every child are gone within 5 s
// of SIGTERM, leaving no process of theirs behind.
func TestSIGTERMStopsEverything(t *testing.T) {
	t.Parallel()
	a := start(t, "--isolate", "cron,files")
	st := a.ready(t)
	agentPID := a.cmd.Process.Pid
	groups := map[int]bool{agentPID: true}
	for _, s := range st.Services {
		if s.Name != "cron" && s.Name != "files" {
			continue
		}
		if s.Mode != agent.ModeChild || s.PID == agentPID {
			t.Fatalf("%s is not isolated: %+v", s.Name, s)
		}
		groups[s.PID] = true
	}
	if len(groups) != 3 {
		t.Fatalf("want cron and files as children: %+v", st.Services)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("agent still running 5 s after SIGTERM; output:\n%s", a.out)
	}
	if a.err != nil {
		t.Fatalf("agent exited with %v; output:\n%s", a.err, a.out)
	}
	for _, pid := range allPIDs() {
		ppid, pgid, state, ok := procInfo(pid)
		if !ok {
			continue
		}
		if groups[pid] || ppid == agentPID || groups[pgid] {
			t.Errorf("process %d (ppid %d, pgid %d, state %s) outlived the agent", pid, ppid, pgid, state)
		}
	}
}

// TestSecondAgentOnSameDataFailsFast: the data directory's lock turns a
// second agent away with a message that says why.
func TestSecondAgentOnSameDataFailsFast(t *testing.T) {
	t.Parallel()
	a := start(t)
	a.ready(t)
	base := freeBase(t)
	out, err := deckhand(t, nil, "run", "--data", a.data, "--listen", "127.0.0.1:"+strconv.Itoa(base), "--port-base", strconv.Itoa(base))
	if err == nil || !strings.Contains(out, "another deckhand agent is already running") || !strings.Contains(out, a.data) {
		t.Fatalf("second agent: %v %q", err, out)
	}
	// The first is unharmed.
	if st := a.status(); !allRunning(st) {
		t.Fatalf("first agent after the second's attempt: %+v", st)
	}
}

// TestRemoteClientsNeedADocument: without a proxy permissions document only
// loopback clients pass the gateway, and the status is loopback-only.
func TestRemoteClientsNeedADocument(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP()
	if ip == "" {
		t.Skip("this machine has no non-loopback IPv4 address to call from")
	}
	base := freeBase(t)
	data := t.TempDir()
	gw := "127.0.0.1:" + strconv.Itoa(base)
	a := startRaw(t, nil, gw, base, data, "run", "--data", data, "--listen", "0.0.0.0:"+strconv.Itoa(base),
		"--port-base", strconv.Itoa(base), "--log-level", "warn")
	a.ready(t)
	remote := "http://" + net.JoinHostPort(ip, strconv.Itoa(base))
	for _, path := range []string{"/_/cron/health", "/_agent/status"} {
		status, m, raw := get(t, remote+path)
		if status != 403 || m["code"] != "FORBIDDEN" {
			t.Errorf("%s from %s: %d %s", path, ip, status, raw)
		}
	}
	if status, _, raw := get(t, "http://"+gw+"/_/cron/health"); status != 200 {
		t.Fatalf("loopback: %d %s", status, raw)
	}
}

func nonLoopbackIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, ad := range addrs {
		if n, ok := ad.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestKilledAgentTakesItsChildren: even `kill -9` of the agent leaves no
// child behind (the kernel's parent-death signal).
func TestKilledAgentTakesItsChildren(t *testing.T) {
	t.Parallel()
	a := start(t, "--isolate", "cron")
	st := a.ready(t)
	child := st.Services[0].PID
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	deadline := time.Now().Add(10 * time.Second) // hang guard
	for time.Now().Before(deadline) {
		// A zombie is dead; reaping it is init's business now.
		if _, _, state, ok := procInfo(child); !ok || state == "Z" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("child %d outlived its killed agent", child)
}

// TestSystemdNotifications: READY=1 once every service is healthy,
// WATCHDOG=1 pings when systemd asks for them, STOPPING=1 on SIGTERM — from
// the agent alone, never from its children.
func TestSystemdNotifications(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	type note struct{ msg string }
	notes := make(chan note, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				close(notes)
				return
			}
			notes <- note{msg: string(buf[:n])}
		}
	}()
	base := freeBase(t)
	data := t.TempDir()
	gw := "127.0.0.1:" + strconv.Itoa(base)
	a := startRaw(t, []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=100000"}, gw, base, data,
		"run", "--data", data, "--listen", gw, "--port-base", strconv.Itoa(base), "--isolate", "cron", "--log-level", "warn")

	next := func(what string) string {
		select {
		case n := <-notes:
			return n.msg
		case <-a.done:
			t.Fatalf("agent exited waiting for %s: %v\n%s", what, a.err, a.out)
		case <-time.After(30 * time.Second): // hang guard
			t.Fatalf("no %s notification", what)
		}
		return ""
	}
	for {
		msg := next("READY=1")
		if msg == "READY=1" {
			break
		}
		if msg != "WATCHDOG=1" { // the watchdog may tick during startup
			t.Fatalf("notification %q before READY=1", msg)
		}
	}
	if st := a.status(); !allRunning(st) {
		t.Fatalf("READY=1 before every service was healthy: %+v", st)
	}
	for i := 0; i < 2; i++ {
		if msg := next("WATCHDOG=1"); msg != "WATCHDOG=1" {
			t.Fatalf("notification %q, want WATCHDOG=1", msg)
		}
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		msg := next("STOPPING=1")
		if msg == "STOPPING=1" {
			break
		}
		if msg != "WATCHDOG=1" {
			t.Fatalf("unexpected notification %q", msg)
		}
	}
	<-a.done
	for len(notes) > 0 {
		if n := <-notes; n.msg == "READY=1" {
			t.Fatal("a second READY=1 (a child must not talk to systemd)")
		}
	}
}

// TestDisplayRunsItsOwnBinary: with a display configured and deckhand-display
// installed beside deckhand (as `make build` does), the display service is
// that binary as a supervised child; without a display it is the in-process
// stand-in that reports unavailable.
func TestDisplayRunsItsOwnBinary(t *testing.T) {
	t.Parallel()
	if _, ok := agent.Lookup("display"); !ok {
		t.Skip("display is not registered")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		t.Skip("deckhand-display is not beside deckhand (run through `make test`, or set DECKHAND_BIN to a directory holding both)")
	}
	display := platformtest.StartXvfb(t, "640x480x24")
	a := start(t, "--display", display, "--services", "cron,display")
	st := a.waitFor(t, "display running", func(s *agent.Status) bool {
		return s != nil && len(s.Services) == 2 && s.Services[1].State == agent.StateRunning
	})
	d := st.Services[1]
	if d.Name != "display" || d.Mode != agent.ModeChild || !strings.Contains(d.Command, "deckhand-display --listen") ||
		d.Health == nil || d.Health.Status != "ok" || d.Health.PID != d.PID {
		t.Fatalf("display %+v", d)
	}
	status, m, raw := get(t, "http://"+a.gw+"/_/display/api/v1/display/info")
	if status != 200 || m["width"] != float64(640) || m["height"] != float64(480) {
		t.Fatalf("display info through the gateway: %d %s", status, raw)
	}
	if err := syscall.Kill(d.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.waitFor(t, "display restarted", func(s *agent.Status) bool {
		return s != nil && s.Services[1].State == agent.StateRunning && s.Services[1].Restarts >= 1 && s.Services[1].PID != d.PID
	})
}

// TestDisplayWithoutAnXServerIsUnavailable: no display configured, the agent
// still starts and the display service says why it cannot work.
func TestDisplayWithoutAnXServerIsUnavailable(t *testing.T) {
	t.Parallel()
	if _, ok := agent.Lookup("display"); !ok {
		t.Skip("display is not registered")
	}
	a := start(t, "--services", "display", "--isolate", "display")
	st := a.ready(t)
	d := st.Services[0]
	if d.State != agent.StateUnavailable || d.Mode != agent.ModeInProcess || d.Health == nil ||
		d.Health.Status != "unavailable" || !strings.Contains(d.Health.Detail, "display") {
		t.Fatalf("display %+v health %+v", d, d.Health)
	}
	status, m, raw := get(t, "http://"+a.gw+"/_/display/api/v1/display/info")
	if status != 503 || m["code"] == nil || m["message"] == "" {
		t.Fatalf("display info without X: %d %s", status, raw)
	}
	out, err := deckhand(t, nil, "status", "--listen", a.gw)
	if err != nil || !strings.Contains(out, "unavailable") {
		t.Fatalf("status: %v %s", err, out)
	}
}

// TestServiceAlone: `deckhand service NAME` serves one service on --listen,
// keeps its state in <data>/<name>/store.db and stops cleanly on SIGTERM.
func TestServiceAlone(t *testing.T) {
	t.Parallel()
	base := freeBase(t)
	data := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(base+2)
	a := startRaw(t, []string{"DECKHAND_LISTEN=127.0.0.1:1"}, addr, base, data, "service", "files", "--listen", addr, "--data", data)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("files never listened on %s:\n%s", addr, a.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	status, m, raw := get(t, "http://"+addr+"/api/v1/version")
	if status != 200 || m["version"] != "v1" {
		t.Fatalf("%d %s", status, raw)
	}
	status, m, _ = get(t, "http://"+addr+"/health")
	if status != 200 || m["service"] != "files" || int(m["pid"].(float64)) != a.cmd.Process.Pid {
		t.Fatalf("health %v", m)
	}
	if _, err := os.Stat(filepath.Join(data, "files", "store.db")); err != nil {
		t.Fatalf("no files/store.db: %v", err)
	}
	// A second copy on the same data is turned away.
	out, err := deckhand(t, nil, "service", "files", "--listen", "127.0.0.1:0", "--data", data)
	if err == nil || !strings.Contains(out, "already running") {
		t.Fatalf("second files: %v %s", err, out)
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	<-a.done
	if a.err != nil {
		t.Fatalf("exit: %v\n%s", a.err, a.out)
	}
}

// TestPortConflictIsClear: a taken service port stops the agent at start
// with a message naming the service, the address and the flags.
func TestPortConflictIsClear(t *testing.T) {
	t.Parallel()
	base := freeBase(t)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+2))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := deckhand(t, nil, "run", "--data", t.TempDir(), "--listen", "127.0.0.1:"+strconv.Itoa(base), "--port-base", strconv.Itoa(base))
	want := "files: listen 127.0.0.1:" + strconv.Itoa(base+2)
	if err == nil || !strings.Contains(out, want) || !strings.Contains(out, "--port-base") || !strings.Contains(out, "address already in use") {
		t.Fatalf("%v %q, want %q", err, out, want)
	}
}

// TestAsPID1: started as PID 1 of a PID namespace (a container without an
// init), deckhand becomes that namespace's init: it runs the agent as its
// child, reaps orphans, and passes SIGTERM on.
func TestAsPID1(t *testing.T) {
	t.Parallel()
	unshare, err1 := exec.LookPath("unshare")
	nsenter, err2 := exec.LookPath("nsenter")
	if os.Geteuid() != 0 || err1 != nil || err2 != nil {
		t.Skip("needs root, unshare and nsenter")
	}
	if out, err := exec.Command(unshare, "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("no PID namespaces here: %v %s", err, out)
	}
	base := freeBase(t)
	data := t.TempDir()
	gw := "127.0.0.1:" + strconv.Itoa(base)
	a := &agentProc{gw: gw, base: base, data: data, out: &platformtest.SyncBuffer{}, done: make(chan struct{})}
	a.cmd = exec.Command(unshare, "--pid", "--fork", "--mount-proc", "--kill-child", bin, "run", "--data", data,
		"--listen", gw, "--port-base", strconv.Itoa(base), "--isolate", "cron", "--log-level", "warn")
	a.cmd.Env = cleanEnv()
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.err = a.cmd.Wait(); close(a.done) }()
	initPID := 0
	t.Cleanup(func() {
		// unshare ignores SIGTERM while it waits; its --kill-child takes
		// the namespace down when it is killed.
		if initPID != 0 {
			_ = syscall.Kill(initPID, syscall.SIGTERM)
		}
		select {
		case <-a.done:
		case <-time.After(10 * time.Second):
			_ = a.cmd.Process.Kill()
			<-a.done
		}
	})
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for a.status() == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	st := a.ready(t)
	if st.Agent.PID == 1 {
		t.Fatal("the agent itself is PID 1; it should run under deckhand's init")
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", a.cmd.Process.Pid, a.cmd.Process.Pid))
	if err != nil || len(strings.Fields(string(raw))) != 1 {
		t.Fatalf("unshare's children: %q %v", raw, err)
	}
	initPID, _ = strconv.Atoi(strings.Fields(string(raw))[0])

	// An orphan: the shell exits at once, its sleep is re-parented to PID 1.
	if out, err := exec.Command(nsenter, "-t", strconv.Itoa(initPID), "-p", "--", "sh", "-c", "sleep 1 </dev/null >/dev/null 2>&1 & exit 0").CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v %s", err, out)
	}
	orphan := 0
	for _, pid := range allPIDs() {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if ppid, _, _, ok := procInfo(pid); ok && ppid == initPID && strings.TrimSpace(string(comm)) == "sleep" {
			orphan = pid
		}
	}
	if orphan == 0 {
		t.Fatal("the orphaned sleep was not re-parented to deckhand's init")
	}
	deadline = time.Now().Add(10 * time.Second) // hang guard
	for {
		_, _, state, ok := procInfo(orphan)
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d never reaped (state %s)", orphan, state)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if err := syscall.Kill(initPID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("SIGTERM to deckhand's init did not stop the agent:\n%s", a.out)
	}
	if a.err != nil {
		t.Fatalf("exit %v:\n%s", a.err, a.out)
	}
}

// TestStopKillsAChildThatIgnoresSIGTERM: a child that does not stop on
// SIGTERM (here: frozen with SIGSTOP) is killed after the grace period, and
// the whole stop still fits in 5 s.
func TestStopKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	a := start(t, "--isolate", "cron")
	st := a.ready(t)
	child := st.Services[0].PID
	if st.Services[0].Name != "cron" || st.Services[0].Mode != agent.ModeChild {
		t.Fatalf("cron is not a child: %+v", st.Services[0])
	}
	if err := syscall.Kill(child, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(child, syscall.SIGCONT)
		t.Fatalf("agent still running 5 s after SIGTERM with a frozen child:\n%s", a.out)
	}
	if a.err != nil {
		t.Fatalf("exit %v:\n%s", a.err, a.out)
	}
	if _, _, state, ok := procInfo(child); ok {
		t.Fatalf("frozen child %d survived the agent (state %s)", child, state)
	}
	if !strings.Contains(a.out.String(), "child ignored SIGTERM; killing") {
		t.Errorf("the forced kill was not logged:\n%s", a.out)
	}
}
