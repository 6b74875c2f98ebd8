package e2e_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/agent"
)

// TestRunCurlNotificationsThroughGateway: every path of the run, curl and
// notifications services answers through the gateway of the real binary.
func TestRunCurlNotificationsThroughGateway(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	bare := filepath.Join(tmp, "pkg.git")
	work := filepath.Join(tmp, "work")
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", bare}, {"clone", "-q", bare, work}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "one"}, {"push", "-q", "origin", "HEAD:main"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}

	bus := sessionBus(t)
	a := start(t, "--services", "run,curl,notifications", "--notifications-bus", bus, "--notifications-display", ":5")
	a.ready(t)
	gw := "http://" + a.gw + "/_/"
	var sourceID string
	for _, c := range []struct {
		method, path, body string
		want               int
		check              func(m map[string]any) bool
	}{
		{"GET", "run/api/v1/run/profiles", "", 200, nil},
		{"POST", "run/api/v1/run/profiles", `{"name":"dev","env":{"A":"1"}}`, 201, nil},
		{"PATCH", "run/api/v1/run/profiles/dev", `{"cwd":"/tmp"}`, 200, nil},
		{"POST", "run/api/v1/run/profiles/dev/select", "", 200, func(m map[string]any) bool { return m["active"] == true }},
		{"DELETE", "run/api/v1/run/profiles/dev", "", 204, nil},
		{"PATCH", "run/api/v1/run/profiles/dev", `{}`, 404, nil},
		{"POST", "run/api/v1/run/profiles", `{"name":"x","cwd":"rel"}`, 400, func(m map[string]any) bool { return m["details"] == "cwd" }},
		{"POST", "run/api/v1/run/sources", `{"name":"pkg","type":"git","url":"` + bare + `","ref":"main"}`, 201,
			func(m map[string]any) bool { sourceID, _ = m["id"].(string); return sourceID != "" }},
		{"GET", "run/api/v1/run/sources", "", 200, nil},
		{"PATCH", "run/api/v1/run/sources/{id}", `{"dir":"deps/pkg"}`, 200, nil},
		{"POST", "run/api/v1/run/sources/{id}/sync", "", 200, func(m map[string]any) bool { return m["sync"].(map[string]any)["state"] == "ok" }},
		{"POST", "run/api/v1/run/sources/sync", "", 200, func(m map[string]any) bool { return m["ok"].(float64) == 1 }},
		{"GET", "run/api/v1/run/sources/{id}/diagnostics", "", 200, func(m map[string]any) bool { return m["exists"] == true }},
		{"DELETE", "run/api/v1/run/sources/{id}", "", 204, nil},
		{"GET", "run/api/v1/run/sources/{id}/diagnostics", "", 404, nil},

		{"POST", "curl/api/v1/curl/sessions/web/cookies", `{"cookies":[{"domain":"example.com","name":"sid","value":"topsecret"}]}`, 201, nil},
		{"GET", "curl/api/v1/curl/sessions", "", 200, func(m map[string]any) bool { return len(m["sessions"].([]any)) == 1 }},
		{"GET", "curl/api/v1/curl/sessions/web", "", 200, func(m map[string]any) bool {
			return strings.HasPrefix(m["path"].(string), filepath.Join(a.data, "curl", "jars"))
		}},
		{"GET", "curl/api/v1/curl/sessions/web/cookies", "", 200, func(m map[string]any) bool {
			return m["cookies"].([]any)[0].(map[string]any)["value"] == "********"
		}},
		{"DELETE", "curl/api/v1/curl/sessions/web", "", 204, nil},
		{"GET", "curl/api/v1/curl/sessions/web", "", 404, nil},

		{"GET", "notifications/api/v1/notifications/agent", "", 200, nil},
		{"GET", "notifications/api/v1/notifications/:0", "", 200, func(m map[string]any) bool { return m["display"] == ":0" }},
		{"POST", "notifications/api/v1/notifications/dismiss", `{"all":true}`, 200, nil},
		{"DELETE", "notifications/api/v1/notifications/dismiss", "", 200, nil},
		{"POST", "notifications/api/v1/notifications/dismiss", `{}`, 400, func(m map[string]any) bool { return m["details"] == "ids" }},
		// The ingest route never answers through the gateway.
		{"POST", "notifications/api/v1/notifications/ingest", `{"kind":"port.opened"}`, 404, nil},
	} {
		path := strings.ReplaceAll(c.path, "{id}", sourceID)
		status, m, raw := send(t, c.method, gw+path, c.body)
		if status != c.want || (c.check != nil && !c.check(m)) {
			t.Fatalf("%s %s: %d %s, want %d", c.method, path, status, raw, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(a.data, "run", "workspace", "deps", "pkg", "README")); err != nil {
		t.Fatalf("synced source: %v", err)
	}
	// The stream's WebSocket passes the gateway.
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+a.gw+"/_/notifications/api/v1/notifications/stream?since=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var hello map[string]any
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := ws.ReadJSON(&hello); err != nil || hello["type"] != "hello" {
		t.Fatalf("hello %v %v", hello, err)
	}
	// A desktop notification from notify-send on the agent's session bus
	// (--notifications-bus) reaches the stream through the gateway. The
	// service may still be taking the bus name: retry until it answers.
	deadline := time.Now().Add(20 * time.Second)
	for {
		cmd := exec.Command("notify-send", "-a", "e2e", "from the desktop")
		cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS="+bus)
		out, err := cmd.CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("notify-send: %v %s\n%s", err, out, a.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		var fr struct {
			Type         string `json:"type"`
			Notification struct {
				Title   string `json:"title"`
				Display string `json:"display"`
			} `json:"notification"`
		}
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := ws.ReadJSON(&fr); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if fr.Notification.Title == "from the desktop" {
			if fr.Notification.Display != ":5" {
				t.Fatalf("display %q", fr.Notification.Display)
			}
			break
		}
	}
	status, m, raw := send(t, "GET", gw+"notifications/api/v1/notifications/5", "")
	if status != 200 || len(m["notifications"].([]any)) != 1 {
		t.Fatalf("GET :5: %d %s", status, raw)
	}
}

// sessionBus starts a private D-Bus session bus for the test.
func sessionBus(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("dbus-daemon (scripts/setup.sh installs dbus): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestAgentEventsReachTheStream: with every service in its own process, a
// failing exec schedule (event from an isolated child) and a SIGKILLed
// service (event from the supervisor) both arrive on the notifications
// stream, through the loopback ingest route.
func TestAgentEventsReachTheStream(t *testing.T) {
	t.Parallel()
	for _, isolate := range []string{"none", "exec,cron,notifications"} {
		t.Run("isolate="+isolate, func(t *testing.T) {
			t.Parallel()
			sched := filepath.Join(t.TempDir(), "schedules.yaml")
			if err := os.WriteFile(sched, []byte("schedules:\n  - name: broken\n    schedule: \"@every 1s\"\n    command: exit 3\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			a := start(t, "--services", "cron,exec,notifications", "--isolate", isolate, "--exec-schedules", sched)
			st := a.ready(t)
			ws, _, err := websocket.DefaultDialer.Dial("ws://"+a.gw+"/_/notifications/api/v1/notifications/stream", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			want := map[string]bool{"schedule.failed": false}
			if isolate != "none" {
				want["service.crashed"] = false
				for _, s := range st.Services {
					if s.Name == "cron" && s.Mode == agent.ModeChild {
						_ = syscall.Kill(s.PID, syscall.SIGKILL)
					}
				}
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				missing := false
				for _, seen := range want {
					missing = missing || !seen
				}
				if !missing {
					return
				}
				_ = ws.SetReadDeadline(deadline)
				_, data, err := ws.ReadMessage()
				if err != nil {
					t.Fatalf("stream ended before %v: %v\n%s", want, err, a.out)
				}
				var fr struct {
					Notification struct {
						EventKind string `json:"event_kind"`
					} `json:"notification"`
				}
				_ = json.Unmarshal(data, &fr)
				if _, ok := want[fr.Notification.EventKind]; ok {
					want[fr.Notification.EventKind] = true
				}
			}
		})
	}
}
