package notifications_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/gorilla/websocket"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/notifications"
)

// sessionBus starts a private D-Bus session bus for the test and answers
// its address.
func sessionBus(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatal("dbus-daemon is not installed (scripts/setup.sh installs dbus)")
	}
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

type fixture struct {
	svc  *notifications.Service
	host *platform.Host
	url  string
	bus  string
}

func newFixture(t *testing.T, bus string, deps ...contract.ServiceDeps) fixture {
	t.Helper()
	d := platformtest.ServiceDeps(t, "notifications")
	if len(deps) > 0 {
		d = deps[0]
	}
	if bus == "" {
		bus = "none"
	}
	svc, err := notifications.New(d, &notifications.Settings{Bus: bus, Display: ":77"})
	if err != nil {
		t.Fatal(err)
	}
	h := platformtest.ServiceHost(t, svc)
	url := platformtest.Serve(t, h)
	t.Cleanup(func() { _ = svc.Close() })
	f := fixture{svc: svc, host: h, url: url, bus: bus}
	if bus != "none" {
		f.waitHealthy(t)
	}
	return f
}

// waitHealthy waits until the service owns the bus name.
func (f fixture) waitHealthy(t *testing.T) {
	t.Helper()
	end := time.Now().Add(15 * time.Second)
	for time.Now().Before(end) {
		if st, detail := f.svc.HealthStatus(); st == "ok" && detail == "" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, detail := f.svc.HealthStatus()
	t.Fatalf("never served the bus: %s %s", st, detail)
}

func (f fixture) call(t *testing.T, method, path, body string) (int, map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return platformtest.Do(t, req)
}

type frame struct {
	Type         string                     `json:"type"`
	Seq          uint64                     `json:"seq"`
	Oldest       uint64                     `json:"oldest"`
	From         uint64                     `json:"from"`
	To           uint64                     `json:"to"`
	Notification notifications.Notification `json:"notification"`
}

type stream struct {
	c *websocket.Conn
	t *testing.T
}

func (f fixture) stream(t *testing.T, query string) *stream {
	t.Helper()
	ws := "ws" + strings.TrimPrefix(f.url, "http") + "/api/v1/notifications/stream" + query
	c, resp, err := websocket.DefaultDialer.Dial(ws, nil)
	if err != nil {
		t.Fatalf("dial %s: %v %v", ws, err, resp)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &stream{c: c, t: t}
}

func (s *stream) next() frame {
	s.t.Helper()
	_ = s.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var fr frame
	if err := s.c.ReadJSON(&fr); err != nil {
		s.t.Fatalf("stream: %v", err)
	}
	return fr
}

func notifySend(t *testing.T, bus string, args ...string) string {
	t.Helper()
	cmd := exec.Command("notify-send", args...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS="+bus)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("notify-send %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	svc, err := notifications.New(platformtest.ServiceDeps(t, "notifications"), &notifications.Settings{Bus: "none"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	h := platformtest.ServiceHost(t, svc)
	platformtest.CheckRoutesDocumented(t, h)
	if platformtest.CheckQueryValidation(t, h) == 0 {
		t.Fatal("no query parameters checked")
	}
}

// TestNotifySendReachesTheStream: notify-send (libnotify) on a test session
// bus raises a notification that a stream client receives, the display
// lists, a dismissal ends (with NotificationClosed on the bus), and a
// replacement and an expiry behave as the specification says.
func TestNotifySendReachesTheStream(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("notify-send"); err != nil {
		t.Fatal("notify-send is not installed (scripts/setup.sh installs libnotify-bin)")
	}
	bus := sessionBus(t)
	f := newFixture(t, bus)
	st := f.stream(t, "")
	if h := st.next(); h.Type != "hello" || h.Seq != 0 {
		t.Fatalf("hello: %+v", h)
	}

	// Watch NotificationClosed as the sending program would.
	conn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.AddMatchSignal(dbus.WithMatchInterface("org.freedesktop.Notifications"), dbus.WithMatchMember("NotificationClosed")); err != nil {
		t.Fatal(err)
	}
	signals := make(chan *dbus.Signal, 10)
	conn.Signal(signals)
	var name, vendor, version, spec string
	if err := conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications").
		Call("org.freedesktop.Notifications.GetServerInformation", 0).Store(&name, &vendor, &version, &spec); err != nil || name != "deckhand" || spec != "1.2" {
		t.Fatalf("GetServerInformation: %v %s %s", err, name, spec)
	}

	idText := notifySend(t, bus, "-p", "-a", "builder", "-u", "critical", "Build done", "all green")
	fr := st.next()
	n := fr.Notification
	if fr.Type != "notification" || fr.Seq != 1 || n.Title != "Build done" || n.Body != "all green" || n.Source != "builder" ||
		n.Display != ":77" || n.Kind != "desktop" || n.Urgency != "critical" || n.Level != "error" || strconv.Itoa(int(n.DBusID)) != idText {
		t.Fatalf("frame %+v (notify-send printed %q)", fr, idText)
	}
	for _, d := range []string{":77", "77"} {
		code, m, raw := f.call(t, "GET", "/api/v1/notifications/"+d, "")
		if code != 200 || m["display"] != ":77" || len(m["notifications"].([]any)) != 1 || m["seq"].(float64) != 1 {
			t.Fatalf("GET %s: %d %s", d, code, raw)
		}
	}

	// Replacing keeps the id and updates the text.
	notifySend(t, bus, "-r", idText, "-a", "builder", "Build done", "all green, twice")
	if fr = st.next(); fr.Notification.ID != n.ID || fr.Notification.Body != "all green, twice" {
		t.Fatalf("replace: %+v", fr)
	}

	code, m, raw := f.call(t, "POST", "/api/v1/notifications/dismiss", `{"ids":["`+n.ID+`"]}`)
	if code != 200 || len(m["dismissed"].([]any)) != 1 {
		t.Fatalf("dismiss: %d %s", code, raw)
	}
	if fr = st.next(); fr.Type != "dismissed" || fr.Notification.DismissReason != "dismissed" || !fr.Notification.Dismissed {
		t.Fatalf("dismissed frame %+v", fr)
	}
	select {
	case sig := <-signals:
		if sig.Body[0].(uint32) != n.DBusID || sig.Body[1].(uint32) != 2 {
			t.Fatalf("NotificationClosed %v", sig.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no NotificationClosed on the bus")
	}
	if _, m, _ = f.call(t, "GET", "/api/v1/notifications/:77", ""); len(m["notifications"].([]any)) != 0 {
		t.Fatalf("still open: %v", m)
	}

	// A timeout expires it.
	notifySend(t, bus, "-t", "150", "short")
	if fr = st.next(); fr.Type != "notification" || fr.Notification.ExpiresAt == nil {
		t.Fatalf("%+v", fr)
	}
	if fr = st.next(); fr.Type != "dismissed" || fr.Notification.DismissReason != "expired" {
		t.Fatalf("expiry: %+v", fr)
	}
}

// TestStreamResumesFromSequence: a client that reconnects with the last seq
// it saw gets exactly what it missed, in order, then live messages; agent
// events arrive through the agent's relay.
func TestStreamResumesFromSequence(t *testing.T) {
	t.Parallel()
	deps := platformtest.ServiceDeps(t, "notifications")
	relay := notifications.NewRelay(deps.Logger)
	deps.Notifier = relay
	f := newFixture(t, "", deps)
	st := f.stream(t, "")
	st.next() // hello
	relay.Notify(contract.Event{Kind: contract.EventProgramCrashed, Source: "daemon", Level: "error", Title: "web crashed"})
	first := st.next()
	if first.Notification.Kind != "event" || first.Notification.EventKind != "program.crashed" || first.Notification.Display != "agent" {
		t.Fatalf("event frame %+v", first)
	}
	_ = st.c.Close()
	for i := 0; i < 3; i++ {
		relay.Notify(contract.Event{Kind: contract.EventScheduleFailed, Source: "exec", Level: "warn", Title: "job " + strconv.Itoa(i)})
	}
	relay.Wait()
	st2 := f.stream(t, "?since="+strconv.FormatUint(first.Seq, 10))
	if h := st2.next(); h.Type != "hello" || h.Seq != first.Seq+3 || h.Oldest != 1 {
		t.Fatalf("hello %+v", h)
	}
	for i := 0; i < 3; i++ {
		fr := st2.next()
		if fr.Seq != first.Seq+1+uint64(i) || fr.Notification.Title != "job "+strconv.Itoa(i) {
			t.Fatalf("resumed frame %d: %+v", i, fr)
		}
	}
	relay.Notify(contract.Event{Kind: contract.EventPortOpened, Source: "agent", Title: "port 3000 opened"})
	if fr := st2.next(); fr.Notification.EventKind != "port.opened" || fr.Notification.Level != "info" {
		t.Fatalf("live after resume: %+v", fr)
	}
	// Dismissing from the stream itself.
	if err := st2.c.WriteJSON(map[string]any{"type": "dismiss", "ids": []string{first.Notification.ID}}); err != nil {
		t.Fatal(err)
	}
	if fr := st2.next(); fr.Type != "dismissed" || fr.Notification.ID != first.Notification.ID {
		t.Fatalf("%+v", fr)
	}
	code, m, raw := f.call(t, "DELETE", "/api/v1/notifications/dismiss?display=agent", "")
	if code != 200 || len(m["dismissed"].([]any)) != 4 {
		t.Fatalf("clear: %d %s", code, raw)
	}
	_, m, _ = f.call(t, "GET", "/api/v1/notifications/agent", "")
	if len(m["notifications"].([]any)) != 0 {
		t.Fatalf("after clear: %v", m)
	}
}

// TestKeptAcrossRestartAndGaps: messages survive a restart of the service
// on the same store, and a client resuming from before the kept window is
// told about the gap.
func TestKeptAcrossRestartAndGaps(t *testing.T) {
	t.Parallel()
	deps := platformtest.ServiceDeps(t, "notifications")
	svc, err := notifications.New(deps, &notifications.Settings{Bus: "none", Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		svc.Notify(contract.Event{Kind: contract.EventScheduleFailed, Source: "exec", Title: "job " + strconv.Itoa(i)})
	}
	_ = svc.Close()
	svc2, err := notifications.New(deps, &notifications.Settings{Bus: "none", Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc2.Close() })
	url := platformtest.Serve(t, platformtest.ServiceHost(t, svc2))
	f := fixture{svc: svc2, url: url}
	st := f.stream(t, "?since=1")
	if h := st.next(); h.Seq != 5 || h.Oldest != 3 {
		t.Fatalf("hello %+v", h)
	}
	if g := st.next(); g.Type != "gap" || g.From != 2 || g.To != 2 {
		t.Fatalf("gap %+v", g)
	}
	for want := uint64(3); want <= 5; want++ {
		if fr := st.next(); fr.Seq != want {
			t.Fatalf("got %+v, want seq %d", fr, want)
		}
	}
	svc2.Notify(contract.Event{Kind: contract.EventPortOpened, Source: "agent", Title: "after restart"})
	if fr := st.next(); fr.Seq != 6 {
		t.Fatalf("seq after restart: %+v", fr)
	}
}

// TestRelayForwardsOverLoopbackIngest: the relay of an agent whose
// notifications service runs as its own process posts to the ingest route
// with the key from the service's data directory; others are refused.
func TestRelayForwardsOverLoopbackIngest(t *testing.T) {
	t.Parallel()
	deps := platformtest.ServiceDeps(t, "notifications")
	f := newFixture(t, "", deps)
	relay := notifications.NewRelay(deps.Logger)
	relay.Forward(f.url, deps.DataDir)
	st := f.stream(t, "")
	st.next()
	relay.Notify(contract.Event{Kind: contract.EventServiceCrashed, Source: "agent", Level: "error", Title: "cron crashed"})
	if fr := st.next(); fr.Notification.EventKind != "service.crashed" || fr.Notification.Title != "cron crashed" {
		t.Fatalf("%+v", fr)
	}
	relay.Wait()
	body := `{"kind":"port.opened","source":"x","title":"t"}`
	for _, c := range []struct {
		hdr  map[string]string
		want int
	}{
		{map[string]string{}, 401},
		{map[string]string{notifications.IngestKeyHeader: "wrong"}, 401},
		{map[string]string{notifications.IngestKeyHeader: readKey(t, deps.DataDir), "X-Forwarded-For": "203.0.113.9"}, 404},
	} {
		req, _ := http.NewRequest("POST", f.url+notifications.IngestPath, strings.NewReader(body))
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		if code, _, raw := platformtest.Do(t, req); code != c.want {
			t.Errorf("%v: %d %s, want %d", c.hdr, code, raw, c.want)
		}
	}
}

func readKey(t *testing.T, dir string) string {
	b, err := os.ReadFile(dir + "/" + notifications.IngestKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	for _, c := range []struct {
		method, path, body string
		status             int
		field              string
	}{
		{"POST", "/api/v1/notifications/dismiss", `{}`, 400, "ids"},
		{"POST", "/api/v1/notifications/dismiss", `{"ids":["x1"]}`, 400, "ids[0]"},
		{"POST", "/api/v1/notifications/dismiss", `{"ids":["n1"],"all":true}`, 400, "all"},
		{"POST", "/api/v1/notifications/dismiss", `{"all":true,"display":"tv"}`, 400, "display"},
		{"POST", "/api/v1/notifications/dismiss", `{"ids":"n1"}`, 400, "ids"},
		{"POST", "/api/v1/notifications/dismiss", `{"ids":["n99"]}`, 404, "notification"},
		{"GET", "/api/v1/notifications/tv", ``, 400, "display"},
		{"DELETE", "/api/v1/notifications/dismiss?display=tv", ``, 400, "display"},
		{"GET", "/api/v1/notifications/stream", ``, 400, ""},
		{"GET", "/api/v1/notifications/stream?since=-1", ``, 400, "since"},
	} {
		code, m, raw := f.call(t, c.method, c.path, c.body)
		if code != c.status || (c.field != "" && m["details"] != c.field) {
			t.Errorf("%s %s %s: %d %s, want %d naming %q", c.method, c.path, c.body, code, raw, c.status, c.field)
		}
	}
	// A stream client that never reads does not hold up senders.
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.url, "http")+"/api/v1/notifications/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		for i := 0; i < 400; i++ {
			f.svc.Notify(contract.Event{Kind: "port.opened", Source: "t", Title: strings.Repeat("x", 2000)})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("a client that does not read held up Notify")
	}
}
