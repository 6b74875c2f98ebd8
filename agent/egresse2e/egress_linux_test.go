package egresse2e

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"

	"deckhand/agent/egress"
	"deckhand/control/controltest"
	"deckhand/platform/platformtest"
	"deckhand/platform/platformtest/netlab"
)

var agentBin string

func TestMain(m *testing.M) {
	bin, _, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBin = bin
	controltest.MainOnce(m)
}

const (
	socksUser, socksPass = "agentuser", "E2e-sock-Pass"
	controlPort          = "9000"
)

// env is a control plane reachable from the lab at ProxyAddr:9000, a
// project with container c1 and alice's credential for its agent.
type env struct {
	*netlab.Lab
	s      *controltest.Server
	alice  string
	agent  string // the agent's --token
	netURL string
	dante  *netlab.Proc
	web    *netlab.Web
	dns    *netlab.DNS
	tamper *tamper
	// middle sits between the lab and tamper: it replays and relabels
	// genuine signed answers.
	middle *platformtest.Middle
}

// tamper sits between the lab and the control plane and, while flip is
// set, changes one byte of the effective network configuration's body
// (still valid JSON: a digit of the version).
type tamper struct {
	srv     *httptest.Server
	flip    atomic.Bool
	flipped atomic.Int64
}

func newTamper(t *testing.T, target string) *tamper {
	u, _ := url.Parse(target)
	tp := &tamper{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if !tp.flip.Load() || !strings.HasSuffix(r.Request.URL.Path, "/network/effective") || r.StatusCode != 200 {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		if i := bytes.Index(body, []byte(`"version":`)); i >= 0 {
			if body[i+10] == '9' {
				body[i+10] = '8'
			} else {
				body[i+10] = '9'
			}
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

func newEnv(t *testing.T) *env {
	l := netlab.New(t)
	s := controltest.Start(t)
	e := &env{Lab: l, s: s, netURL: "/api/v1/containers/c1/network"}
	admin := s.Admin()
	_, e.alice = s.User(admin, "alice@example.com")
	pid := controltest.Data(s.Must(s.Call("POST", "/api/v1/projects", map[string]any{"name": "P"}, e.alice), 201))["id"].(string)
	s.Must(s.Call("POST", "/api/v1/admin/containers", map[string]any{"project_id": pid, "name": "one", "id": "c1"}, admin), 201)
	e.agent = controltest.Data(s.Must(s.Call("POST", "/api/v1/containers/c1/agent-tokens", nil, e.alice), 201))["token"].(string)
	e.tamper = newTamper(t, s.URL)
	e.middle = platformtest.NewMiddle(t, e.tamper.srv.URL, "/network/effective")
	l.Relay(l.Proxy, netlab.ProxyAddr+":"+controlPort, strings.TrimPrefix(e.middle.URL, "http://"))
	e.dante = l.Dante(socksUser, socksPass)
	e.web = l.Web(netlab.TargetAddr)
	e.dns = l.DNS(netlab.TargetAddr, map[string]string{"allowed.test": netlab.TargetAddr, "evil.test": netlab.Target2Addr})
	l.Resolver(l.Container, netlab.StrayDNSAddr)
	return e
}

type agentProc struct {
	*netlab.Proc
	gw, data string
}

// startAgent runs `deckhand run` in the container namespace; wrap is a
// command line it runs under.
func (e *env) startAgent(t *testing.T, wrap ...string) *agentProc {
	t.Helper()
	return e.startAgentIn(t, t.TempDir(), wrap...)
}

// startAgentIn is startAgent on data directory data.
func (e *env) startAgentIn(t *testing.T, data string, wrap ...string) *agentProc {
	t.Helper()
	base := 17700
	a := &agentProc{gw: "127.0.0.1:" + strconv.Itoa(base), data: data}
	argv := append(wrap, agentBin, "run", "--data", data, "--listen", a.gw, "--port-base", strconv.Itoa(base),
		"--services", "cron", "--log-level", "info",
		"--control-url", "http://"+netlab.ProxyAddr+":"+controlPort, "--insecure-control-url", "--container-id", "c1", "--token", e.agent)
	cmd := e.Exec(e.Container, argv...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	a.Proc = e.Start("agent", cmd, "")
	cl := e.HTTPClient(e.Container)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if a.Exited() {
			t.Fatalf("agent exited:\n%s", a.Output())
		}
		if resp, err := cl.Get("http://" + a.gw + "/_/cron/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return a
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("agent never served:\n%s", a.Output())
	return nil
}

// remote waits (up to 30 s: the agent polls every 2 s) until GET
// network's remote_status satisfies ok.
func (e *env) remote(t *testing.T, what string, ok func(rs map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var rs map[string]any
	for time.Now().Before(deadline) {
		g := controltest.Data(e.s.Must(e.s.Call("GET", e.netURL, nil, e.alice), 200))
		rs, _ = g["remote_status"].(map[string]any)
		if rs != nil && ok(rs) {
			return rs
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("remote_status never showed %s: %v", what, rs)
	return nil
}

func (e *env) get(t *testing.T, url string) netlab.Hit {
	t.Helper()
	before := len(e.web.Hits())
	code, out, errOut := e.Curl("-f", url)
	if code != 0 || len(e.web.Hits()) != before+1 {
		t.Fatalf("curl %s: exit %d %q %s (hits %d → %d)", url, code, out, errOut, before, len(e.web.Hits()))
	}
	return e.web.Hits()[before]
}

func (e *env) tablePresent(t *testing.T) bool {
	t.Helper()
	f := e.NSFile(e.Container)
	defer f.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if tb.Name == egress.TableName {
			return true
		}
	}
	return false
}

func TestAgentEnforcesTheControlPlanesConfiguration(t *testing.T) {
	e := newEnv(t)
	s := e.s
	proxy := fmt.Sprintf("socks5://%s:%s@%s:%d", socksUser, socksPass, netlab.ProxyAddr, netlab.SOCKSPort)
	s.Must(s.Call("PUT", e.netURL, map[string]any{"type": "socks5", "proxy": proxy, "dns_servers": []string{netlab.TargetAddr}}, e.alice), 200)
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	a := e.startAgent(t)

	rs := e.remote(t, "the rules in force", func(rs map[string]any) bool { return rs["is_running"] == true && rs["in_sync"] == true })
	if rs["enforceable"] != true || rs["last_check"] == nil {
		t.Fatalf("remote_status %v", rs)
	}
	// Traffic goes through dante, names through the configured server.
	if hit := e.get(t, "http://allowed.test/"); hit.Remote != netlab.ProxyOutAddr {
		t.Fatalf("request from %s, want the proxy", hit.Remote)
	}
	if len(netlab.Lines(e.dante.Log(), "username%"+socksUser+"@"+netlab.ContainerAddr, netlab.TargetAddr+".80")) == 0 {
		t.Fatalf("dante logged no connection:\n%s", e.dante.Log())
	}
	if qs := e.dns.Queries(); len(qs) == 0 || qs[len(qs)-1].Name != "allowed.test" {
		t.Fatalf("configured DNS server: %v", qs)
	}
	// The decision reaches remote_status.
	e.remote(t, "the decision", func(rs map[string]any) bool {
		for _, d := range rs["recent_decisions"].([]any) {
			if m := d.(map[string]any); m["outcome"] == "proxied" && m["destination"] == netlab.TargetAddr+":80" {
				return true
			}
		}
		return false
	})

	// stop: the rules go, traffic is direct; start: they come back.
	s.Must(s.Call("POST", e.netURL+"/stop", nil, e.alice), 200)
	e.remote(t, "stopped", func(rs map[string]any) bool { return rs["is_running"] == false && rs["in_sync"] == true })
	if e.tablePresent(t) {
		t.Fatal("table present after stop")
	}
	if hit := e.get(t, "http://"+netlab.TargetAddr+"/"); hit.Remote != netlab.ContainerAddr {
		t.Fatalf("stopped: request from %s", hit.Remote)
	}
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	e.remote(t, "started", func(rs map[string]any) bool { return rs["is_running"] == true && rs["in_sync"] == true })
	if hit := e.get(t, "http://"+netlab.TargetAddr+"/"); hit.Remote != netlab.ProxyOutAddr {
		t.Fatalf("started: request from %s", hit.Remote)
	}

	// An allow list applies as the next version.
	s.Must(s.Call("PUT", e.netURL, map[string]any{"type": "socks5", "proxy": "socks5://" + netlab.ProxyAddr + ":1080",
		"dns_servers": []string{netlab.TargetAddr}, "allow": []string{"allowed.test"}}, e.alice), 200)
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	e.remote(t, "the allow list", func(rs map[string]any) bool { return rs["is_running"] == true && rs["in_sync"] == true })
	if code, _, _ := e.Curl("http://" + netlab.Target2Addr + "/"); code == 0 {
		t.Fatal("an IP literal outside the allow list went out")
	}
	e.get(t, "http://allowed.test/")
	e.remote(t, "the denial", func(rs map[string]any) bool {
		for _, d := range rs["recent_decisions"].([]any) {
			if m := d.(map[string]any); m["outcome"] == "denied" && m["destination"] == netlab.Target2Addr+":80" {
				return true
			}
		}
		return false
	})

	// deckhand network, inside the container, shows the decisions.
	out, err := e.Exec(e.Container, agentBin, "network", "--listen", a.gw, "-o", "json").Output()
	if err != nil {
		t.Fatalf("deckhand network: %v %s", err, out)
	}
	var st struct {
		IsRunning bool `json:"is_running"`
		Recent    []struct {
			Outcome, Destination, Reason string
		} `json:"recent"`
	}
	if err := json.Unmarshal(out, &st); err != nil || !st.IsRunning || len(st.Recent) == 0 {
		t.Fatalf("deckhand network: %v %s", err, out)
	}
	table, _ := e.Exec(e.Container, agentBin, "network", "--listen", a.gw).Output()
	if !strings.Contains(string(table), "denied") || !strings.Contains(string(table), netlab.Target2Addr+":80") {
		t.Fatalf("deckhand network table:\n%s", table)
	}
	// The agent's journal has the decisions, never the password.
	if !strings.Contains(a.Output(), "egress denied") || strings.Contains(a.Output(), socksPass) {
		t.Fatalf("agent log:\n%s", a.Output())
	}

	// A tampered answer (one byte of the signed body changed) is refused:
	// the rules in force stay, the agent says why.
	e.tamper.flip.Store(true)
	s.Must(s.Call("POST", e.netURL+"/stop", nil, e.alice), 200)
	deadline := time.Now().Add(30 * time.Second)
	for e.tamper.flipped.Load() == 0 || !strings.Contains(a.Output(), "failed signature verification") {
		if time.Now().After(deadline) {
			t.Fatalf("no tampered answer refused (%d flipped):\n%s", e.tamper.flipped.Load(), a.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !e.tablePresent(t) {
		t.Fatal("a tampered stop took the rules out")
	}
	if hit := e.get(t, "http://allowed.test/"); hit.Remote != netlab.ProxyOutAddr {
		t.Fatalf("under a tampered answer: request from %s", hit.Remote)
	}
	e.tamper.flip.Store(false)
	e.remote(t, "the stop, untampered", func(rs map[string]any) bool { return rs["is_running"] == false && rs["in_sync"] == true })
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	e.remote(t, "started again", func(rs map[string]any) bool { return rs["is_running"] == true && rs["in_sync"] == true })

	// The agent stops: its rules stay, egress stays closed.
	a.Stop()
	if !e.tablePresent(t) {
		t.Fatal("the table went with the agent")
	}
	if code, _, _ := e.Curl("--max-time", "10", "http://"+netlab.TargetAddr+"/"); code == 0 {
		t.Fatal("egress opened when the agent stopped")
	}

	// With the control plane gone, a restarted agent puts the last
	// verified configuration back in force from its data directory.
	s.Stop()
	b := e.startAgentIn(t, a.data)
	deadline = time.Now().Add(30 * time.Second)
	for !e.tablePresent(t) {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted agent put no rules back:\n%s", b.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hit := e.get(t, "http://allowed.test/"); hit.Remote != netlab.ProxyOutAddr {
		t.Fatalf("restarted without a control plane: request from %s", hit.Remote)
	}
	if code, _, _ := e.Curl("http://" + netlab.Target2Addr + "/"); code == 0 {
		t.Fatal("restarted without a control plane: the allow list did not hold")
	}
}

func TestAgentWithoutNetAdminReportsNotEnforceable(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	e := newEnv(t)
	s := e.s
	s.Must(s.Call("PUT", e.netURL, map[string]any{"type": "block"}, e.alice), 200)
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	a := e.startAgent(t, "setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin", "--")
	rs := e.remote(t, "not enforceable", func(rs map[string]any) bool { return rs["enforceable"] == false })
	if rs["is_running"] != false || !strings.Contains(rs["reason"].(string), "CAP_NET_ADMIN") {
		t.Fatalf("remote_status %v", rs)
	}
	if e.tablePresent(t) {
		t.Fatal("a table without CAP_NET_ADMIN")
	}
	// Nothing pretends: traffic is not blocked, and the CLI says so.
	e.get(t, "http://"+netlab.TargetAddr+"/")
	out, err := e.Exec(e.Container, agentBin, "network", "--listen", a.gw).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not enforceable") || !strings.Contains(string(out), "CAP_NET_ADMIN") {
		t.Fatalf("deckhand network: %v\n%s", err, out)
	}
}
