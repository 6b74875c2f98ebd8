package run_test

import (
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/services/run"
)

// counted is an HTTP server on addr (127.0.0.1:0 when empty) that counts
// the connections it accepts.
func counted(t *testing.T, addr string, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// ownAddr is a non-loopback address of this machine's interfaces ("" when
// it has none).
func ownAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestSourcesCannotReachThisMachine: a source URL naming loopback, an
// unspecified or link-local address or one of this machine's addresses is
// 400 naming url; a host name that resolves to one is refused when the
// sync connects, as is a redirect to one; no connection reaches the
// local server. --run-allow-hosts opens one host.
func TestSourcesCannotReachThisMachine(t *testing.T) {
	t.Parallel()
	local, conns := counted(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(tgz(t, map[string]string{"f": "x"}))
	}))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(local.URL, "http://"))
	// A sync that did connect (to a server speaking another protocol)
	// ends here instead of the default 10 minutes.
	h, _, _ := newHostSettings(t, &run.Settings{AllowHosts: []string{"127.0.0.2"}, SyncTimeout: 20 * time.Second})

	refused := []struct{ typ, url string }{
		{"archive", local.URL + "/a.tgz"},
		{"archive", "http://localhost:" + port + "/a.tgz"},
		{"archive", "http://LOCALHOST.:" + port + "/a.tgz"},
		{"archive", "http://x.localhost:" + port + "/a.tgz"},
		{"archive", "http://[::1]:" + port + "/a.tgz"},
		{"archive", "http://[::ffff:127.0.0.1]:" + port + "/a.tgz"},
		{"archive", "http://0.0.0.0:" + port + "/a.tgz"},
		{"archive", "http://127.1.2.3:" + port + "/a.tgz"},
		{"archive", "http://169.254.169.254/latest/meta-data"},
		{"archive", "http://[fe80::1]/a.tgz"},
		{"git", "http://127.0.0.1:" + port + "/repo.git"},
		{"git", "https://localhost/repo.git"},
		{"git", "ssh://git@127.0.0.1:" + port + "/repo.git"},
		{"git", "git@127.0.0.1:repo.git"},
		{"git", "git@[0:0:0:0:0:0:0:1]:repo.git"},
		{"git", "git://localhost/repo.git"},
	}
	if own := ownAddr(t); own != "" {
		refused = append(refused, struct{ typ, url string }{"archive", "http://" + net.JoinHostPort(own, port) + "/a.tgz"})
	}
	for _, c := range refused {
		st, m, raw := do(t, h, "POST", "/api/v1/run/sources", `{"name":"s","type":"`+c.typ+`","url":"`+c.url+`","dir":"d"}`)
		if st == 201 { // let the next case reuse the name
			do(t, h, "DELETE", "/api/v1/run/sources/"+m["id"].(string), "")
		}
		if st != 400 || m["details"] != "url" || !strings.Contains(raw, "may not reach") {
			t.Errorf("%s %s: %d %s, want 400 naming url", c.typ, c.url, st, raw)
		}
	}
	// A change to such a URL is refused the same way.
	st, m, raw := do(t, h, "POST", "/api/v1/run/sources", `{"name":"ok","type":"archive","url":"http://192.0.2.10/a.tgz"}`)
	if st != 201 {
		t.Fatalf("a public address: %d %s", st, raw)
	}
	if st, m, raw := do(t, h, "PATCH", "/api/v1/run/sources/"+m["id"].(string), `{"url":"`+local.URL+`/a.tgz"}`); st != 400 || m["details"] != "url" {
		t.Errorf("patch to loopback: %d %s", st, raw)
	}

	// A name that resolves to this machine passes the check of the URL
	// and is refused when the sync connects, git's transports included.
	name, _ := os.Hostname()
	if ips, err := net.LookupHost(name); err == nil && isOwn(t, ips) {
		for i, c := range []struct{ typ, url string }{
			{"archive", "http://" + net.JoinHostPort(name, port) + "/a.tgz"},
			{"git", "http://" + net.JoinHostPort(name, port) + "/repo.git"},
			{"git", "ssh://git@" + net.JoinHostPort(name, port) + "/repo.git"},
			{"git", "git://" + net.JoinHostPort(name, port) + "/repo.git"},
		} {
			st, m, raw := do(t, h, "POST", "/api/v1/run/sources", `{"name":"n`+string(rune('0'+i))+`","type":"`+c.typ+`","url":"`+c.url+`"}`)
			if st != 201 {
				t.Fatalf("%s by name: %d %s", c.url, st, raw)
			}
			_, m, raw = do(t, h, "POST", "/api/v1/run/sources/"+m["id"].(string)+"/sync", "")
			sync, _ := m["sync"].(map[string]any)
			if sync["state"] != "error" || !strings.Contains(sync["last_error"].(string), "may not reach") {
				t.Errorf("%s by name (%v): %s", c.url, ips, raw)
			}
		}
	} else {
		t.Logf("host name %q does not resolve to this machine (%v %v): the by-name cases are not run", name, ips, err)
	}

	// An allowed host redirecting to a refused one: the redirect's
	// connection is refused.
	redirector, redirects := counted(t, "127.0.0.2:0", http.RedirectHandler(local.URL+"/a.tgz", http.StatusFound))
	st, m, raw = do(t, h, "POST", "/api/v1/run/sources", `{"name":"redir","type":"archive","url":"`+redirector.URL+`/a.tgz"}`)
	if st != 201 {
		t.Fatalf("an allowed host: %d %s", st, raw)
	}
	_, m, raw = do(t, h, "POST", "/api/v1/run/sources/"+m["id"].(string)+"/sync", "")
	if sync, _ := m["sync"].(map[string]any); sync["state"] != "error" || !strings.Contains(sync["last_error"].(string), "127.0.0.1 is loopback") {
		t.Errorf("redirect to loopback: %s", raw)
	}
	if redirects.Load() == 0 {
		t.Error("the allowed host was never asked")
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connections reached the local server", n)
	}
}

func isOwn(t *testing.T, ips []string) bool {
	own := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			own[n.IP.String()] = true
		}
	}
	for _, s := range ips {
		if ip := net.ParseIP(s); ip == nil || !(ip.IsLoopback() || own[ip.String()]) {
			return false
		}
	}
	return len(ips) > 0
}

func TestAllowHostsFlag(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"10.0.0.0/33", "exa mple.com", "a..b"} {
		if err := (&run.Settings{AllowHosts: []string{bad}}).Validate(); err == nil || !strings.Contains(err.Error(), "--run-allow-hosts") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// localName is this machine's host name when it resolves to this machine
// only (the by-name cases need one); the test is skipped without.
func localName(t *testing.T) string {
	name, _ := os.Hostname()
	ips, err := net.LookupHost(name)
	if err != nil || !isOwn(t, ips) {
		t.Skipf("host name %q does not resolve to this machine (%v %v)", name, ips, err)
	}
	return name
}

// TestGitSyncHeldToTheCheckedAddress: a git source by host name, allowed
// by address, syncs through the pins that hold git to the address the
// check saw: curl's resolve list over smart HTTP (git http-backend) and
// the rewritten URL over git:// (git daemon).
func TestGitSyncHeldToTheCheckedAddress(t *testing.T) {
	t.Parallel()
	name := localName(t)
	tmp := t.TempDir()
	bare, work := filepath.Join(tmp, "repo.git"), filepath.Join(tmp, "work")
	gitRun(t, tmp, "init", "--quiet", "--bare", "-b", "main", bare)
	gitRun(t, tmp, "clone", "--quiet", bare, work)
	if err := os.WriteFile(filepath.Join(work, "f.txt"), []byte("pinned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "--quiet", "-m", "one")
	gitRun(t, work, "push", "--quiet", "origin", "HEAD:main")

	web := httptest.NewServer(&cgi.Handler{Path: "/usr/lib/git-core/git-http-backend",
		Env: []string{"GIT_PROJECT_ROOT=" + tmp, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(web.Close)
	_, webPort, _ := net.SplitHostPort(strings.TrimPrefix(web.URL, "http://"))

	// git daemon in inetd mode on each accepted connection: no port to
	// pick and lose in a race.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				cmd := exec.Command("git", "daemon", "--inetd", "--export-all", "--base-path="+tmp, tmp)
				cmd.Stdin, cmd.Stdout = c, c
				_ = cmd.Run()
			}()
		}
	}()
	_, daemonPort, _ := net.SplitHostPort(ln.Addr().String())

	h, ws, _ := newHostSettings(t, &run.Settings{AllowHosts: []string{"127.0.0.0/8"}, SyncTimeout: time.Minute})
	for i, u := range []string{
		"http://" + net.JoinHostPort(name, webPort) + "/repo.git",
		"git://" + net.JoinHostPort(name, daemonPort) + "/repo.git",
	} {
		dir := "p" + string(rune('0'+i))
		st, m, raw := do(t, h, "POST", "/api/v1/run/sources", `{"name":"`+dir+`","type":"git","url":"`+u+`","ref":"main"}`)
		if st != 201 {
			t.Fatalf("%s: %d %s", u, st, raw)
		}
		_, m, raw = do(t, h, "POST", "/api/v1/run/sources/"+m["id"].(string)+"/sync", "")
		if sync, _ := m["sync"].(map[string]any); sync["state"] != "ok" {
			t.Fatalf("%s: %s", u, raw)
		}
		if b, err := os.ReadFile(filepath.Join(ws, dir, "f.txt")); err != nil || string(b) != "pinned\n" {
			t.Fatalf("%s: %q %v", u, b, err)
		}
	}
}
