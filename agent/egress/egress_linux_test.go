package egress_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"deckhand/agent/egress"
	"deckhand/platform/netconf"
	"deckhand/platform/platformtest/netlab"
)

const (
	socksUser, socksPass = "proxyuser", "sock-Pass-91"
	webUser, webPass     = "webuser", "web-Pass-37"
)

var zone = map[string]string{
	"allowed.test":       netlab.TargetAddr,
	"other.allowed.test": netlab.TargetAddr,
	"evil.test":          netlab.Target2Addr,
}

// world is a lab with proxies, two web hosts and two DNS servers; the
// container's resolv.conf names the stray one, which the configuration
// never names.
type world struct {
	*netlab.Lab
	dante, tiny, stunnel *netlab.Proc
	web, web2            *netlab.Web
	dns, stray           *netlab.DNS
}

func newWorld(t testing.TB) *world {
	l := netlab.New(t)
	w := &world{Lab: l}
	w.dante = l.Dante(socksUser, socksPass)
	w.tiny = l.Tinyproxy(webUser, webPass)
	w.stunnel = l.Stunnel()
	w.web = l.Web(netlab.TargetAddr)
	w.web2 = l.Web(netlab.Target2Addr)
	w.dns = l.DNS(netlab.TargetAddr, zone)
	w.stray = l.DNS(netlab.StrayDNSAddr, zone)
	l.Resolver(l.Container, netlab.StrayDNSAddr)
	return w
}

func doc(typ, proxy string, running bool, version int64) *netconf.Document {
	return &netconf.Document{Container: "c1", Type: typ, Proxy: proxy, DNSServers: []string{netlab.TargetAddr}, Running: running, Version: version}
}

func socksDoc(v int64) *netconf.Document {
	return doc("socks5", fmt.Sprintf("socks5://%s:%s@%s:%d", socksUser, socksPass, netlab.ProxyAddr, netlab.SOCKSPort), true, v)
}

func httpDoc(v int64) *netconf.Document {
	return doc("http", fmt.Sprintf("http://%s:%s@%s:%d", webUser, webPass, netlab.ProxyAddr, netlab.HTTPPort), true, v)
}

func httpsDoc(v int64) *netconf.Document {
	return doc("https", fmt.Sprintf("https://%s:%s@%s:%d", webUser, webPass, netlab.ProxyAddr, netlab.HTTPSPort), true, v)
}

// get fetches url in the container and wants 200 with the host's
// greeting; it returns the hit the web host recorded.
func (w *world) get(t testing.TB, web *netlab.Web, args ...string) netlab.Hit {
	t.Helper()
	before := len(web.Hits())
	code, out, errOut := w.Curl(append([]string{"--cacert", w.CAFile, "-f"}, args...)...)
	if code != 0 || !strings.Contains(out, "hello from "+web.Addr) {
		t.Fatalf("curl %v: exit %d, %q %s", args, code, out, errOut)
	}
	hits := web.Hits()
	if len(hits) != before+1 {
		t.Fatalf("curl %v: the web host saw %d requests, want 1", args, len(hits)-before)
	}
	return hits[len(hits)-1]
}

// refused runs curl and wants it to fail with exit code want (0: any),
// the web hosts seeing nothing.
func (w *world) refused(t *testing.T, want int, args ...string) string {
	t.Helper()
	b1, b2 := len(w.web.Hits()), len(w.web2.Hits())
	code, out, errOut := w.Curl(append([]string{"--cacert", w.CAFile}, args...)...)
	if code == 0 || (want != 0 && code != want) {
		t.Fatalf("curl %v: exit %d (%q %s), want failure %d", args, code, out, errOut, want)
	}
	if len(w.web.Hits()) != b1 || len(w.web2.Hits()) != b2 {
		t.Fatalf("curl %v failed (exit %d) but a web host was reached: %v %v", args, code, w.web.Hits()[b1:], w.web2.Hits()[b2:])
	}
	return errOut
}

// tablePresent asks the container namespace's kernel for the agent's table.
func (w *world) tablePresent(t testing.TB) bool {
	t.Helper()
	f := w.NSFile(w.Container)
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

func (w *world) dnsFrom(server *netlab.DNS, name string) []netlab.Query {
	var out []netlab.Query
	for _, q := range server.Queries() {
		if q.Name == name {
			out = append(out, q)
		}
	}
	return out
}

// journalHas waits (up to 10 s: the helper's stderr arrives through a
// pipe) for an entry with msg whose fields contain the given strings.
func journalHas(e *engineProc, msg string, fields map[string]string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if journalNow(e, msg, fields) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func journalNow(e *engineProc, msg string, fields map[string]string) bool {
	for _, en := range e.journal() {
		if en.Message != msg {
			continue
		}
		ok := true
		for k, v := range fields {
			if s, _ := en.Fields[k].(string); !strings.Contains(s, v) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestEngineEnforcesEachProxyType(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// Without rules the container reaches the target directly: the lab
	// would show a leak.
	if hit := w.get(t, w.web, "http://"+netlab.TargetAddr+"/"); hit.Remote != netlab.ContainerAddr {
		t.Fatalf("direct request came from %s", hit.Remote)
	}
	e := startEngine(t, w.Lab, w.Container, nil)
	dnsBefore := len(w.dns.Queries())

	t.Run("socks5", func(t *testing.T) {
		st := e.apply(socksDoc(1))
		if !st.IsRunning || !st.Enforceable || st.Version != 1 {
			t.Fatalf("status %+v", st)
		}
		hit := w.get(t, w.web, "http://allowed.test/")
		if hit.Remote != netlab.ProxyOutAddr {
			t.Fatalf("request arrived from %s, want the proxy's %s", hit.Remote, netlab.ProxyOutAddr)
		}
		if hit := w.get(t, w.web, "https://allowed.test/"); hit.Remote != netlab.ProxyOutAddr || hit.SNI != "allowed.test" {
			t.Fatalf("TLS request %+v", hit)
		}
		log := w.dante.Log()
		if len(netlab.Lines(log, "username%"+socksUser+"@"+netlab.ContainerAddr, netlab.TargetAddr+".80")) == 0 ||
			len(netlab.Lines(log, "username%"+socksUser+"@"+netlab.ContainerAddr, netlab.TargetAddr+".443")) == 0 {
			t.Fatalf("dante did not log the authenticated connections:\n%s", log)
		}
		// DNS: the configured server answered, over TCP through the
		// proxy; the server resolv.conf names never saw a question.
		qs := w.dnsFrom(w.dns, "allowed.test")
		if len(qs) == 0 || qs[len(qs)-1].From != netlab.ProxyOutAddr || qs[len(qs)-1].Net != "tcp" {
			t.Fatalf("questions at the configured server: %+v", w.dns.Queries()[dnsBefore:])
		}
		if len(netlab.Lines(log, netlab.TargetAddr+".53")) == 0 {
			t.Fatalf("DNS did not go through dante:\n%s", log)
		}
		if n := len(w.stray.Queries()); n != 0 {
			t.Fatalf("the DNS server from resolv.conf got %d questions", n)
		}
		// A stub resolver on loopback (none listens here) is answered
		// by the agent's resolver all the same.
		w.Resolver(w.Container, "127.0.0.53")
		w.get(t, w.web, "http://other.allowed.test/")
		w.Resolver(w.Container, netlab.StrayDNSAddr)
		if qs := w.dnsFrom(w.dns, "other.allowed.test"); len(qs) == 0 {
			t.Fatalf("a loopback stub's question did not reach the configured server")
		}
		if !journalHas(e, "egress proxied", map[string]string{"destination": netlab.TargetAddr + ":80", "via": netlab.ProxyAddr, "protocol": "tcp"}) ||
			!journalHas(e, "egress proxied", map[string]string{"protocol": "dns", "name": "allowed.test"}) {
			t.Fatalf("journal lacks the decisions:\n%s", e.proc.Output())
		}
	})

	t.Run("http CONNECT", func(t *testing.T) {
		e.apply(httpDoc(2))
		before := len(netlab.Lines(w.tiny.Log(), "CONNECT "+netlab.TargetAddr+":80"))
		if hit := w.get(t, w.web, "http://allowed.test/"); hit.Remote != netlab.ProxyOutAddr {
			t.Fatalf("request arrived from %s", hit.Remote)
		}
		log := w.tiny.Log()
		if n := len(netlab.Lines(log, "CONNECT "+netlab.TargetAddr+":80")); n != before+1 {
			t.Fatalf("tinyproxy logged %d new CONNECTs to the target:\n%s", n-before, log)
		}
		if len(netlab.Lines(log, "CONNECT "+netlab.TargetAddr+":53")) == 0 {
			t.Fatalf("DNS did not go through tinyproxy:\n%s", log)
		}
	})

	t.Run("https CONNECT over TLS", func(t *testing.T) {
		e.apply(httpsDoc(3))
		before := len(netlab.Lines(w.stunnel.Log(), "accepted connection from "+netlab.ContainerAddr))
		tinyBefore := len(netlab.Lines(w.tiny.Log(), "CONNECT "+netlab.TargetAddr+":443"))
		if hit := w.get(t, w.web, "https://allowed.test/"); hit.Remote != netlab.ProxyOutAddr {
			t.Fatalf("request arrived from %s", hit.Remote)
		}
		if n := len(netlab.Lines(w.stunnel.Log(), "accepted connection from "+netlab.ContainerAddr)); n <= before {
			t.Fatalf("stunnel accepted no TLS connection from the container:\n%s", w.stunnel.Log())
		}
		if n := len(netlab.Lines(w.tiny.Log(), "CONNECT "+netlab.TargetAddr+":443")); n != tinyBefore+1 {
			t.Fatalf("tinyproxy (behind stunnel) logged %d new CONNECTs:\n%s", n-tinyBefore, w.tiny.Log())
		}
	})

	t.Run("UDP other than DNS is dropped", func(t *testing.T) {
		before := e.check().Dropped
		cmd := w.Exec(w.Container, "bash", "-c", "echo x > /dev/udp/"+netlab.TargetAddr+"/9999")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Operation not permitted") {
			t.Fatalf("UDP send: %v %s", err, out)
		}
		if st := e.check(); st.Dropped <= before {
			t.Fatalf("dropped count %d → %d", before, st.Dropped)
		}
	})

	t.Run("stop and start", func(t *testing.T) {
		st := e.apply(func() *netconf.Document { d := socksDoc(4); d.Running = false; return d }())
		if st.IsRunning || w.tablePresent(t) {
			t.Fatalf("stopped: status %+v, table present %v", st, w.tablePresent(t))
		}
		if hit := w.get(t, w.web, "http://"+netlab.TargetAddr+"/"); hit.Remote != netlab.ContainerAddr {
			t.Fatalf("stopped: request arrived from %s, want direct", hit.Remote)
		}
		if st := e.apply(socksDoc(5)); !st.IsRunning || !w.tablePresent(t) {
			t.Fatalf("started: %+v", st)
		}
		if hit := w.get(t, w.web, "http://"+netlab.TargetAddr+"/"); hit.Remote != netlab.ProxyOutAddr {
			t.Fatalf("started: request arrived from %s, want the proxy", hit.Remote)
		}
	})

	t.Run("credentials never logged", func(t *testing.T) {
		out := e.proc.Output()
		for _, secret := range []string{socksPass, webPass} {
			if strings.Contains(out, secret) {
				t.Fatalf("the engine's journal holds a proxy password")
			}
		}
	})
}

func TestEngineBlockDropsAllButExempt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// Target2's port 80 stands for the control plane.
	e := startEngine(t, w.Lab, w.Container, nil, "HELPER_EXEMPT="+netlab.Target2Addr+":80")
	e.apply(doc("block", "", true, 1))
	// connect fails at once (the kernel refuses the send: curl exit 7),
	// never by timing out (exit 28).
	errOut := w.refused(t, 7, "--connect-timeout", "15", "http://"+netlab.TargetAddr+"/")
	if !strings.Contains(errOut, "Couldn't connect") && !strings.Contains(errOut, "Failed to connect") {
		t.Fatalf("curl: %s", errOut)
	}
	w.refused(t, 7, "--connect-timeout", "15", "https://"+netlab.TargetAddr+"/")
	// Names do not resolve (the resolver refuses under block).
	w.refused(t, 6, "http://allowed.test/")
	if n := len(w.dns.Queries()) + len(w.stray.Queries()); n != 0 {
		t.Fatalf("DNS servers got %d questions under block", n)
	}
	// The exempt destination (the control plane) is reached, directly.
	if hit := w.get(t, w.web2, "http://"+netlab.Target2Addr+"/"); hit.Remote != netlab.ContainerAddr {
		t.Fatalf("exempt request from %s", hit.Remote)
	}
	// but not on another port.
	w.refused(t, 7, "--connect-timeout", "15", "https://"+netlab.Target2Addr+"/")
}

func TestEngineListsHold(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	e := startEngine(t, w.Lab, w.Container, nil)

	t.Run("allow list through the proxy", func(t *testing.T) {
		d := socksDoc(1)
		d.Allow = []string{"allowed.test", "*.allowed.test"}
		e.apply(d)
		w.get(t, w.web, "http://allowed.test/")
		w.get(t, w.web, "https://other.allowed.test/")
		// Not on the list: no answer.
		w.refused(t, 6, "http://evil.test/")
		// An IP literal is not a name the list gave.
		w.refused(t, 0, "http://"+netlab.Target2Addr+"/")
		w.refused(t, 0, "https://"+netlab.Target2Addr+"/")
		// An allowed SNI on another name's address (fronting).
		w.refused(t, 0, "--resolve", "allowed.test:443:"+netlab.Target2Addr, "https://allowed.test/")
		// A Host that is not allowed on an allowed address.
		w.refused(t, 0, "-H", "Host: evil.test", "http://allowed.test/")
		for _, reason := range []string{"not on the allow list", "was not resolved to this address"} {
			if !journalHas(e, "egress denied", map[string]string{"reason": reason}) {
				t.Fatalf("journal lacks a denial %q:\n%s", reason, e.proc.Output())
			}
		}
		if !journalHas(e, "egress denied", map[string]string{"protocol": "dns", "name": "evil.test"}) {
			t.Fatalf("journal lacks the DNS denial:\n%s", e.proc.Output())
		}
		st := e.check()
		if st.Denied == 0 || len(st.Recent) == 0 || st.Recent[0].Outcome != netconf.OutcomeDenied {
			t.Fatalf("status %+v", st)
		}
	})

	t.Run("deny list", func(t *testing.T) {
		d := socksDoc(2)
		d.Deny = []string{"evil.test", netlab.Target2Addr}
		e.apply(d)
		w.get(t, w.web, "http://allowed.test/")
		w.refused(t, 6, "http://evil.test/")
		w.refused(t, 0, "http://"+netlab.Target2Addr+"/")
		w.refused(t, 0, "-H", "Host: evil.test", "http://allowed.test/")
	})

	t.Run("block with an allow list goes direct", func(t *testing.T) {
		d := doc("block", "", true, 3)
		d.Allow = []string{"allowed.test"}
		e.apply(d)
		if hit := w.get(t, w.web, "http://allowed.test/"); hit.Remote != netlab.ContainerAddr {
			t.Fatalf("request from %s, want direct", hit.Remote)
		}
		w.refused(t, 0, "http://"+netlab.Target2Addr+"/")
		w.refused(t, 6, "http://evil.test/")
	})
}

func TestEngineDeadProxyFailsClosed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	e := startEngine(t, w.Lab, w.Container, nil)
	e.apply(socksDoc(1))
	w.get(t, w.web, "http://"+netlab.TargetAddr+"/")
	w.dante.Kill()
	// The client sees its connection reset at once, nothing reaches the
	// target around the proxy.
	errOut := w.refused(t, 0, "http://"+netlab.TargetAddr+"/")
	if !strings.Contains(errOut, "reset") && !strings.Contains(errOut, "Empty reply") && !strings.Contains(errOut, "Couldn't connect") {
		t.Fatalf("curl: %s", errOut)
	}
	if !journalHas(e, "egress denied", map[string]string{"reason": "proxy socks5://" + netlab.ProxyAddr + ":1080: connect"}) {
		t.Fatalf("journal lacks the proxy failure:\n%s", e.proc.Output())
	}
	st := e.check()
	if st.ProxyReachable == nil || *st.ProxyReachable || !strings.Contains(st.Error, "unreachable") || !st.IsRunning {
		t.Fatalf("status %+v", st)
	}
}

func TestEngineRulesStayAfterExit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	e := startEngine(t, w.Lab, w.Container, nil)
	e.apply(socksDoc(1))
	if !w.tablePresent(t) {
		t.Fatal("no table while running")
	}
	// A clean stop leaves the rules: egress stays closed without the
	// agent, whatever ended it.
	e.stop()
	if !w.tablePresent(t) {
		t.Fatal("the table went with the engine")
	}
	w.refused(t, 0, "http://"+netlab.TargetAddr+"/")
	// So does a crash.
	e2 := startEngine(t, w.Lab, w.Container, nil)
	e2.apply(socksDoc(2))
	e2.proc.Kill()
	if !w.tablePresent(t) {
		t.Fatal("no table after a crash")
	}
	w.refused(t, 0, "http://"+netlab.TargetAddr+"/")
	// The next engine puts its configuration in force, or takes the
	// table out when it has none.
	e3 := startEngine(t, w.Lab, w.Container, nil)
	e3.apply(nil)
	if w.tablePresent(t) {
		t.Fatal("the next engine kept the table without a configuration")
	}
	if hit := w.get(t, w.web, "http://"+netlab.TargetAddr+"/"); hit.Remote != netlab.ContainerAddr {
		t.Fatalf("without a configuration the request came from %s", hit.Remote)
	}
}

func TestEngineWithoutNetAdminSaysSo(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	e := startEngine(t, w.Lab, w.Container, []string{"setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin", "--"})
	r := e.call(helperCmd{Op: "apply", Doc: socksDoc(1)})
	if !strings.Contains(r.Error, "not enforceable") || r.Status == nil || r.Status.Enforceable || r.Status.IsRunning ||
		!strings.Contains(r.Status.Reason, "CAP_NET_ADMIN") {
		t.Fatalf("reply %+v", r)
	}
	if w.tablePresent(t) {
		t.Fatal("a table appeared without CAP_NET_ADMIN")
	}
	if hit := w.get(t, w.web, "http://"+netlab.TargetAddr+"/"); hit.Remote != netlab.ContainerAddr {
		t.Fatalf("request from %s", hit.Remote)
	}
	_ = os.Getpid()
}
