package containerse2e_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/control/controltest"
)

// idleTimeout is the containers' idle timeout in these tests, and slack
// how late the action may come: 10 %.
const (
	idleTimeout = 8 * time.Second
	idleSlack   = idleTimeout / 10
)

// awaitIdle waits for container id to leave running for want and answers
// how long after since it was seen there (polling every 50 ms).
func (f *fixture) awaitIdle(id, want string, since time.Time, within time.Duration) (time.Duration, map[string]any) {
	f.t.Helper()
	deadline := since.Add(within)
	for {
		c := data(f.must(200, "GET", "/api/v1/containers/"+id, nil, f.alice))
		if c["status"] == want {
			return time.Since(since), c
		}
		if c["status"] != "running" || time.Now().After(deadline) {
			f.t.Fatalf("container %s is %v (%v) %s after the idle count began, want %s", id, c["status"], c["status_reason"], time.Since(since), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recordTime reads a time field of an answer.
func recordTime(t *testing.T, c map[string]any, field string) time.Time {
	t.Helper()
	s, _ := c[field].(string)
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s of %v: %v", field, c, err)
	}
	return v
}

// reasonIdle reads how long the agent had been idle when the control
// plane acted, from the record's status_reason ("... for 8.1s (...").
func reasonIdle(t *testing.T, c map[string]any) time.Duration {
	t.Helper()
	reason, _ := c["status_reason"].(string)
	m := regexp.MustCompile(` for ([0-9.]+)s \(`).FindStringSubmatch(reason)
	if m == nil {
		t.Fatalf("the reason does not say how long it was idle: %q", reason)
	}
	secs, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("the idle time in %q: %v", reason, err)
	}
	return time.Duration(secs * float64(time.Second))
}

// stillRunning fails the test unless container id stays running for d.
func (f *fixture) stillRunning(id string, d time.Duration, why string) {
	f.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if c := data(f.must(200, "GET", "/api/v1/containers/"+id, nil, f.alice)); c["status"] != "running" {
			f.t.Fatalf("%s: the container went %v (%v)", why, c["status"], c["status_reason"])
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestIdleStop: a container with an idle timeout is not stopped while a
// process runs in it (a `sleep 60`), is stopped within 10 % of the
// timeout after the process ends, is kept while a keep-alive lease
// (deckhand keepalive) lasts, and with idle_action pause is paused, on
// time, and after a resume counts afresh; each action's event says it
// was idle. Bad settings are 400 naming the field, nothing written.
func TestIdleStop(t *testing.T) {
	f := newFixture(t)
	secs := int(idleTimeout / time.Second)

	// Bad input, on create and on PATCH.
	before := f.count()
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"idle_timeout_seconds": 4}, "idle_timeout_seconds"},
		{map[string]any{"idle_timeout_seconds": -1}, "idle_timeout_seconds"},
		{map[string]any{"idle_timeout_seconds": 604801}, "idle_timeout_seconds"},
		{map[string]any{"idle_timeout_seconds": 60, "idle_action": "sleep"}, "idle_action"},
		{map[string]any{"idle_timeout_seconds": "60"}, "idle_timeout_seconds"},
	} {
		body := map[string]any{"project_id": f.project, "name": "bad", "image_id": f.image}
		for k, v := range bad.body {
			body[k] = v
		}
		r := f.s.Call("POST", "/api/v1/containers", body, f.alice)
		if r.Status != 400 || !strings.Contains(string(r.Raw), bad.field) || strings.Contains(string(r.Raw), "unknown field") {
			t.Fatalf("create with %v: %d %s, want 400 naming %s", bad.body, r.Status, r.Raw, bad.field)
		}
	}
	if n := f.count(); n != before {
		t.Fatalf("refused creates left %d containers (was %d)", n, before)
	}

	// Pause: made first, it idles while the stop case runs.
	paused := f.create("idle-pause", map[string]any{"idle_timeout_seconds": secs, "idle_action": "pause"})
	// The other is made without one: until its agent admits the test's
	// token (a refused request is no activity) it would idle away.
	id := f.create("idle-stop", nil)
	base := "/api/v1/containers/" + id
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"idle_timeout_seconds": 4}, "idle_timeout_seconds"},
		{map[string]any{"idle_action": ""}, "idle_action"},
		{map[string]any{"idle_action": "delete"}, "idle_action"},
	} {
		r := f.s.Call("PATCH", base, bad.body, f.alice)
		if r.Status != 400 || !strings.Contains(string(r.Raw), bad.field+": must be") {
			t.Fatalf("PATCH %v: %d %s, want 400 naming %s", bad.body, r.Status, r.Raw, bad.field)
		}
	}
	// Only the container's own agent reports its activity.
	if r := f.s.Call("POST", base+"/activity", map[string]any{"busy": false, "idle_seconds": 3600}, f.alice); r.Status != 403 {
		t.Fatalf("a person's activity report: %d %s", r.Status, r.Raw)
	}

	pc := f.await(paused, "running", 60*time.Second)
	pausedSince := time.Now()
	if pc["idle_timeout_seconds"] != float64(secs) || pc["idle_action"] != "pause" {
		t.Fatalf("the container does not show its idle settings: %v", pc)
	}
	c := f.await(id, "running", 60*time.Second)
	a := f.openAgent(id, c)

	// A lease's bad duration is 400 naming it; nothing is taken.
	for _, bad := range []any{map[string]any{}, map[string]any{"duration_seconds": 0}, map[string]any{"duration_seconds": 86401}} {
		if status, raw := a.try("POST", "/api/v1/agent/leases", bad); status != 400 || !strings.Contains(string(raw), "duration_seconds") {
			t.Fatalf("lease %v: %d %s, want 400 naming duration_seconds", bad, status, raw)
		}
	}
	if status, raw := a.try("GET", "/api/v1/agent/leases", nil); status != 200 || !strings.Contains(string(raw), `"leases":[]`) {
		t.Fatalf("leases after refused ones: %d %s", status, raw)
	}

	// Set by PATCH (reaching the agent at its next report), a running
	// process keeps it: twice the timeout and more.
	if c := data(f.must(200, "PATCH", base, map[string]any{"idle_timeout_seconds": secs}, f.alice)); c["idle_timeout_seconds"] != float64(secs) || c["idle_action"] != "stop" {
		t.Fatalf("PATCH idle_timeout_seconds: %v", c)
	}
	status, raw := a.try("POST", "/_/process/api/v1/process", map[string]any{"shell": "sleep 60"})
	if status != 201 {
		t.Fatalf("start sleep 60: %d %s", status, raw)
	}
	var proc struct{ ID string }
	_ = json.Unmarshal(raw, &proc)

	// Meanwhile the other one paused itself, on time: by the control
	// plane's own clock, from running_since to the paused record.
	_, pc = f.awaitIdle(paused, "paused", pausedSince, 3*idleTimeout)
	took := recordTime(t, pc, "updated_at").Sub(recordTime(t, pc, "running_since"))
	if took < idleTimeout || took > idleTimeout+idleSlack {
		t.Fatalf("idle_action pause came %s after the container ran, want %s (within %s)", took, idleTimeout, idleSlack)
	}
	if !strings.Contains(pc["status_reason"].(string), "idle") {
		t.Fatalf("the paused container's reason does not say idle: %v", pc["status_reason"])
	}
	t.Logf("idle pause after %s", took)

	f.stillRunning(id, 2*idleTimeout, "with a sleep 60 running")
	if status, raw := a.try("DELETE", "/_/process/api/v1/process/"+proc.ID, nil); status/100 != 2 {
		t.Fatalf("kill the sleep: %d %s", status, raw)
	}
	ended := time.Now()
	took, c = f.awaitIdle(id, "stopped", ended, 3*idleTimeout)
	afterProcess := c
	t.Logf("idle stop seen %s after the process ended", took)
	if took < idleTimeout {
		t.Fatalf("stopped %s after the process ended, before the timeout %s", took, idleTimeout)
	}
	if !strings.Contains(c["status_reason"].(string), "idle") {
		t.Fatalf("the stopped container's reason does not say idle: %v", c["status_reason"])
	}

	c = data(f.must(200, "POST", base+"/start", nil, f.alice))
	if c["status"] != "running" {
		t.Fatalf("start again: %v", c)
	}
	home := t.TempDir()
	f.deckhand(home, controltest.GoodPW+"\n", "login", f.s.URL, "--email", "alice@example.com", "--password-stdin")
	lease := f.deckhandJSON(home, "keepalive", "--container", id, "--for", (2 * idleTimeout).String())
	leased := time.Now()
	if lease["duration_seconds"] != float64(2*secs) || !strings.HasPrefix(lease["id"].(string), "lse_") {
		t.Fatalf("deckhand keepalive -o json: %v", lease)
	}
	f.stillRunning(id, 2*idleTimeout-500*time.Millisecond, "under a keep-alive lease")
	took, afterLease := f.awaitIdle(id, "stopped", leased, 2*idleTimeout+3*idleTimeout)
	t.Logf("idle stop seen %s after a %s lease was taken", took, 2*idleTimeout)

	// The decision is the control plane's, at the agent's report: the
	// reason says how long the agent had been idle then. What the poll
	// saw adds the engine's stop (the agent's own shutdown), which a
	// loaded machine stretches; the decision must still be on time.
	for _, stopped := range []map[string]any{afterProcess, afterLease} {
		if idle := reasonIdle(t, stopped); idle < idleTimeout || idle > idleTimeout+idleSlack {
			t.Fatalf("the idle stop was decided after %s idle, want %s (within %s): %v", idle, idleTimeout, idleSlack, stopped["status_reason"])
		}
	}

	// Resumed, the paused one counts afresh: not paused again at once.
	f.must(200, "POST", "/api/v1/containers/"+paused+"/resume", nil, f.alice)
	resumed := time.Now()
	f.stillRunning(paused, idleTimeout-time.Second, "just resumed")
	_, pc = f.awaitIdle(paused, "paused", resumed, 3*idleTimeout)
	if took = recordTime(t, pc, "updated_at").Sub(recordTime(t, pc, "running_since")); took < idleTimeout || took > idleTimeout+idleSlack {
		t.Fatalf("the second idle pause came %s after the resume", took)
	}

	// Each action wrote its event once, with its reason; a PATCH turns
	// it off.
	f.must(200, "PATCH", "/api/v1/containers/"+paused, map[string]any{"idle_timeout_seconds": 0}, f.alice)
	if c := data(f.must(200, "GET", "/api/v1/containers/"+paused, nil, f.alice)); c["idle_timeout_seconds"] != nil {
		t.Fatalf("PATCH idle_timeout_seconds 0: %v", c["idle_timeout_seconds"])
	}
	var pauses int
	for _, k := range f.events(paused) {
		if k == "container.paused" {
			pauses++
		}
	}
	if pauses != 2 {
		t.Fatalf("%d container.paused events, want 2", pauses)
	}
}
