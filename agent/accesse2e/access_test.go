// Package accesse2e drives proxy permissions end to end: the real
// deckhand-control and the real deckhand agent as processes, the document
// written through the control-plane API, requests through the agent's
// gateway, and a test proxy between them that can flip one byte of the
// control plane's answers.
package accesse2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/platform/platformtest"
)

var agentBin string

// TestMain finds (or builds) bin/deckhand, then runs the tests with the
// control-plane harness.
func TestMain(m *testing.M) {
	bin, _, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBin = bin
	controltest.Main(m)
}

var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}

// tamper is a reverse proxy to the control plane that flips one byte of
// the effective document's body while flip is set.
type tamper struct {
	srv     *httptest.Server
	flip    atomic.Bool
	flipped atomic.Int64

	mu    sync.Mutex
	creds map[string]bool // Authorization values the agent sent
	polls atomic.Int64    // effective requests passed on
}

func (tp *tamper) credentials() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []string
	for c := range tp.creds {
		out = append(out, c)
	}
	return out
}

func newTamper(t *testing.T, target string) *tamper {
	u, _ := url.Parse(target)
	tp := &tamper{creds: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/effective") {
			tp.mu.Lock()
			tp.creds[r.Header.Get("Authorization")] = true
			tp.mu.Unlock()
			tp.polls.Add(1)
		}
		director(r)
	}
	rp.ModifyResponse = func(r *http.Response) error {
		if !tp.flip.Load() || !strings.HasSuffix(r.Request.URL.Path, "/effective") {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		if i := bytes.Index(body, []byte(`"value":"`)); i >= 0 {
			body[i+9] ^= 0x01 // one byte of the token value: still valid JSON
			tp.flipped.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	tp.srv = httptest.NewServer(rp)
	t.Cleanup(tp.srv.Close)
	return tp
}

type agentProc struct {
	gw   string
	out  *platformtest.SyncBuffer
	cmd  *exec.Cmd
	done chan struct{}
}

// startAgent runs `deckhand run` (notes only: a services-program service) against the control plane.
// control is a control plane with alice's project and its containers, for
// agents to sync from.
type control struct {
	s          *controltest.Server
	admin      string
	alice, pid string
}

// newControl starts a control plane on the embedded store (the agent's
// side does not depend on the control plane's engine: these tests run
// once, not per engine) with containers ids in alice's project.
func newControl(t *testing.T, ids ...string) *control {
	t.Helper()
	if controltest.OnPostgres() {
		t.Skip("the agent's side does not depend on the control plane's store; run once, on the embedded store")
	}
	s := controltest.Start(t)
	c := &control{s: s, admin: s.Admin()}
	_, c.alice = s.User(c.admin, "alice@example.com")
	c.pid = controltest.Data(s.Must(s.Call("POST", "/api/v1/projects", map[string]any{"name": "P"}, c.alice), 201))["id"].(string)
	for _, id := range ids {
		s.Must(s.Call("POST", "/api/v1/admin/containers", map[string]any{"project_id": c.pid, "name": id, "id": id}, c.admin), 201)
	}
	return c
}

// agentToken mints an agt_ token for container id.
func (c *control) agentToken(id string) string {
	return controltest.Data(c.s.Must(c.s.Call("POST", "/api/v1/containers/"+id+"/agent-tokens", nil, c.alice), 201))["token"].(string)
}

func startAgent(t *testing.T, data string, args ...string) *agentProc {
	t.Helper()
	return startAgentProbe(t, data, nil, args...)
}

// startAgentProbe is startAgent whose readiness probe (a loopback GET of
// notes's health) carries the header pairs probe, so it passes whether or
// not a document granting them is in force yet.
func startAgentProbe(t *testing.T, data string, probe []string, args ...string) *agentProc {
	t.Helper()
attempts:
	for attempt := 0; ; attempt++ {
		base := platformtest.FreePortBase(t, 16) // up to the mcp service (+16)
		a := &agentProc{gw: "127.0.0.1:" + strconv.Itoa(base), out: &platformtest.SyncBuffer{}, done: make(chan struct{})}
		a.cmd = exec.Command(agentBin, append([]string{"run", "--data", data, "--listen", a.gw, "--port-base", strconv.Itoa(base),
			"--services", "notes", "--log-level", "warn", "--trust-proxy-headers"}, args...)...)
		a.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
		a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := a.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = a.cmd.Wait(); close(a.done) }()
		t.Cleanup(a.stop)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-a.done:
				if attempt < 3 && strings.Contains(a.out.String(), "address already in use") {
					continue attempts
				}
				t.Fatalf("agent exited at start:\n%s", a.out)
			default:
			}
			if st, _ := a.get("/_/notes/health", "127.0.0.1", probe...); st == 200 {
				return a
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("agent never served:\n%s", a.out)
	}
}

func (a *agentProc) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// get sends a request through the gateway as a client at addr: an
// outside address arrives as the platform proxy's X-Forwarded-For (the
// agent runs with --trust-proxy-headers); "127.0.0.1" is a loopback
// client. It returns the status and the container error code.
func (a *agentProc) get(path, from string, hdr ...string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+a.gw+path, nil)
	if from != "127.0.0.1" {
		req.Header.Set("X-Forwarded-For", from)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var e struct {
		Code string `json:"code"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Code
}

// within waits until the gateway answers want (≤ limit) and returns how
// long it took.
func (a *agentProc) within(t *testing.T, limit time.Duration, want int, path, from string, hdr ...string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		st, code := a.get(path, from, hdr...)
		if st == want {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("after %s the gateway still answers %d %s, want %d\nagent log:\n%s", limit, st, code, want, a.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stays checks the gateway answers want throughout d.
func (a *agentProc) stays(t *testing.T, d time.Duration, want int, path, from string, hdr ...string) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if st, code := a.get(path, from, hdr...); st != want {
			t.Fatalf("gateway answered %d %s, want %d throughout", st, code, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestGatewayEnforcesSyncedDocument(t *testing.T) {
	c := newControl(t, "c1")
	s, alice, pid := c.s, c.alice, c.pid
	agt := c.agentToken("c1")
	if !strings.HasPrefix(agt, "agt_") {
		t.Fatalf("token %q", agt)
	}
	doc := "/api/v1/containers/c1/proxy/permissions"
	ver := func(r controltest.Resp) string { return controltest.Data(r)["etag"].(string) }

	// A document written through the API: token holders reach services.
	cur := ver(s.Must(s.Call("PUT", doc, map[string]any{"project": pid, "container": "c1",
		"groups":      map[string]any{"bots": map[string]any{"type": "token", "header": "X-Key", "value": "k-one"}},
		"permissions": map[string]any{"bots": map[string]any{"services": true}}}, alice, "If-Match", "file:v0"), 200))

	// The effective route: the container's agent token only; a user's
	// svc_ token (the owner's included) is refused.
	svc := controltest.Data(s.Must(s.Call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "alice"}, alice), 201))["token"].(string)
	s.Must(s.Call("GET", doc+"/effective", nil, svc), 403)
	eff := s.Must(s.Call("GET", doc+"/effective", nil, agt), 200)
	if tag := eff.Header.Get("ETag"); tag != `"container:`+cur+`"` {
		t.Fatalf("effective ETag %q", tag)
	}
	s.Must(s.Call("GET", doc+"/effective", nil, agt, "If-None-Match", eff.Header.Get("ETag")), 304)

	// An agent given a user's svc_ token does not start.
	refused := exec.Command(agentBin, "run", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--services", "cron",
		"--control-url", s.URL, "--container-id", "c1", "--token", svc)
	if out, err := refused.CombinedOutput(); err == nil || !strings.Contains(string(out), "agent token (agt_") || strings.Contains(string(out), svc) {
		t.Fatalf("agent with an svc_ token: %v\n%s", err, out)
	}

	tp := newTamper(t, s.URL)
	data := t.TempDir()
	a := startAgentProbe(t, data, []string{"X-Key", "k-one"}, "--control-url", tp.srv.URL, "--container-id", "c1", "--project-id", pid, "--token", agt)
	const health = "/_/notes/health"
	const outside = "203.0.113.5"

	// Requests through the gateway are allowed and refused as it says.
	a.within(t, 5*time.Second, 200, health, outside, "X-Key", "k-one")
	for _, c := range []struct {
		from   string
		hdr    []string
		status int
		code   string
	}{
		{outside, nil, 401, "UNAUTHORIZED"},
		{outside, []string{"X-Key", "k-two"}, 401, "UNAUTHORIZED"},
		{"127.0.0.1", nil, 401, "UNAUTHORIZED"}, // a document applies to loopback too
		{outside, []string{"X-Key", "k-one"}, 200, ""},
	} {
		if st, code := a.get(health, c.from, c.hdr...); st != c.status || code != c.code {
			t.Fatalf("%s %v: %d %s, want %d %s", c.from, c.hdr, st, code, c.status, c.code)
		}
	}

	// A change applies within 5 s.
	cur = ver(s.Must(s.Call("PUT", doc+"/permissions/bots", map[string]any{"program": "services", "access": false}, alice, "If-Match", cur), 200))
	took := a.within(t, 5*time.Second, 403, health, outside, "X-Key", "k-one")
	t.Logf("change applied in %s", took)

	// A tampered answer (one byte flipped) is rejected; the old document stays.
	tp.flip.Store(true)
	cur = ver(s.Must(s.Call("PUT", doc+"/permissions/bots", map[string]any{"program": "services", "access": true}, alice, "If-Match", cur), 200))
	a.stays(t, 5*time.Second, 403, health, outside, "X-Key", "k-one")
	if tp.flipped.Load() == 0 {
		t.Fatal("the proxy flipped nothing: the tamper case did not run")
	}
	if !strings.Contains(a.out.String(), "failed signature verification") {
		t.Fatalf("agent did not report the bad signature:\n%s", a.out)
	}
	tp.flip.Store(false)
	a.within(t, 5*time.Second, 200, health, outside, "X-Key", "k-one")

	// Without any document only loopback passes; the project's document
	// then governs the container with none.
	s.Must(s.Call("DELETE", doc, nil, alice, "If-Match", cur), 200)
	a.within(t, 5*time.Second, 403, health, outside, "X-Key", "k-one")
	if st, _ := a.get(health, "127.0.0.1"); st != 200 {
		t.Fatalf("no document: loopback refused (%d)", st)
	}
	pdoc := "/api/v1/projects/" + pid + "/proxy/permissions"
	pcur := ver(s.Must(s.Call("PUT", pdoc, map[string]any{"project": pid, "container": "*",
		"groups":      map[string]any{"office": map[string]any{"type": "ip", "range": "203.0.113.0/24"}},
		"permissions": map[string]any{"office": map[string]any{"services": "7000-65535"}}}, alice, "If-Match", "file:v0"), 200))
	a.within(t, 5*time.Second, 200, health, outside)
	if st, code := a.get(health, "198.51.100.1"); st != 401 || code != "UNAUTHORIZED" {
		t.Fatalf("outside the project's range: %d %s", st, code)
	}

	// enable_proxy false closes the gateway to outside traffic.
	s.Must(s.Call("PATCH", pdoc+"/state", map[string]any{"enable_proxy": false}, alice, "If-Match", pcur), 200)
	a.within(t, 5*time.Second, 503, health, outside)
	if st, code := a.get(health, outside); code != "PROXY_DISABLED" {
		t.Fatalf("disabled: %d %s", st, code)
	}
	if st, _ := a.get(health, "127.0.0.1"); st != 200 {
		t.Fatalf("disabled proxy refused loopback: %d", st)
	}

	// The control plane goes away: the last verified document stays in
	// force, also for an agent restarted on the same data.
	s.Stop()
	a.stays(t, 3*time.Second, 503, health, outside)
	if strings.Contains(a.out.String(), "k-one") {
		t.Fatal("a credential reached the agent's log")
	}
	a.stop()
	b := startAgent(t, data, "--control-url", tp.srv.URL, "--container-id", "c1", "--project-id", pid, "--token", agt)
	if st, code := b.get(health, outside); st != 503 || code != "PROXY_DISABLED" {
		t.Fatalf("restarted without a control plane: %d %s, want the last verified document (503 PROXY_DISABLED)", st, code)
	}
	// Every sync carried the agent token, never a user's.
	if seen := tp.credentials(); len(seen) != 1 || seen[0] != "Bearer "+agt {
		t.Fatalf("the agent sent %d distinct credentials, want only its agent token", len(seen))
	}
}

// A revoked agent token stops the sync: the control plane answers 401, a
// change made after the revocation never applies and the last verified
// document stays; the agent restarted with a new token (rotation) syncs
// again.
func TestRevokedAgentTokenStopsSync(t *testing.T) {
	c := newControl(t, "c1")
	s, alice, pid := c.s, c.alice, c.pid
	mint := func() (id, token string) {
		d := controltest.Data(s.Must(s.Call("POST", "/api/v1/containers/c1/agent-tokens", nil, alice), 201))
		return d["id"].(string), d["token"].(string)
	}
	oldID, oldTok := mint()
	doc := "/api/v1/containers/c1/proxy/permissions"
	// The probe group lets the readiness probe through whichever default
	// is in force when the agent first syncs.
	probe := []string{"X-Probe", "p-one"}
	s.Must(s.Call("PUT", doc, map[string]any{"project": pid, "container": "c1",
		"groups":      map[string]any{"probe": map[string]any{"type": "token", "header": probe[0], "value": probe[1]}},
		"permissions": map[string]any{"probe": map[string]any{"services": true}}, "default": "allow"}, alice, "If-Match", "file:v0"), 200)
	tp := newTamper(t, s.URL)
	data := t.TempDir()
	a := startAgentProbe(t, data, probe, "--control-url", tp.srv.URL, "--container-id", "c1", "--token", oldTok)
	const health, outside = "/_/notes/health", "203.0.113.5"
	a.within(t, 10*time.Second, 200, health, outside)

	s.Must(s.Call("DELETE", "/api/v1/containers/c1/agent-tokens/"+oldID, nil, alice), 200)
	s.Must(s.Call("PATCH", doc+"/default", map[string]any{"default": "deny"}, alice, "If-Match", "file:v1"), 200)
	after := tp.polls.Load()
	deadline := time.Now().Add(30 * time.Second)
	for tp.polls.Load() < after+2 || !strings.Contains(a.out.String(), "answered 401") {
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not poll with its revoked token (%d polls):\n%s", tp.polls.Load()-after, a.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, _ := a.get(health, outside); st != 200 {
		t.Fatalf("a change made after the revocation applied (%d): the revoked token still syncs", st)
	}

	a.stop()
	_, newTok := mint()
	b := startAgentProbe(t, data, probe, "--control-url", tp.srv.URL, "--container-id", "c1", "--token", newTok)
	b.within(t, 10*time.Second, 401, health, outside)
	if strings.Contains(a.out.String()+b.out.String(), oldTok) || strings.Contains(b.out.String(), newTok) {
		t.Fatal("an agent token reached the agent's log")
	}
}
