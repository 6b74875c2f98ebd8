package egresse2e

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/platformtest/netlab"
)

// fdLimit is the agent's descriptor limit in the flood test: low enough
// that each flood alone, uncapped, would exhaust it.
const fdLimit = 1024

// A local user floods the egress forwarder and anyone floods the
// gateway with idle connections, each far past the agent's descriptor
// limit. The agent keeps running and serving, egress stays enforced
// (another user's connections still go out through the proxy), and the
// rules stay in the kernel.
func TestAgentSurvivesConnectionFloods(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	e := newEnv(t)
	s := e.s
	proxy := fmt.Sprintf("socks5://%s:%s@%s:%d", socksUser, socksPass, netlab.ProxyAddr, netlab.SOCKSPort)
	s.Must(s.Call("PUT", e.netURL, map[string]any{"type": "socks5", "proxy": proxy, "dns_servers": []string{netlab.TargetAddr}}, e.alice), 200)
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	limit := fmt.Sprintf("--nofile=%d:%d", fdLimit, fdLimit)
	a := e.startAgent(t, "prlimit", limit, "--")
	e.remote(t, "the rules in force", func(rs map[string]any) bool { return rs["is_running"] == true && rs["in_sync"] == true })

	var flood []net.Conn
	t.Cleanup(func() {
		for _, c := range flood {
			c.Close()
		}
	})
	// nobody's connections to the target: each is redirected to the
	// forwarder, which would dial the proxy for it.
	var dialErr error
	e.AsUser(e.Container, nil, func() {
		d := net.Dialer{Timeout: 5 * time.Second}
		for i := 0; i < 2*fdLimit; i++ {
			c, err := d.Dial("tcp", netlab.TargetAddr+":80")
			if err != nil {
				if dialErr == nil {
					dialErr = err
				}
				continue
			}
			flood = append(flood, c)
		}
	})
	t.Logf("%d forwarder connections held (first failure: %v)", len(flood), dialErr)
	// Idle connections to the gateway, no credential, no request.
	dial := e.DialContext(e.Container)
	for i := 0; i < 2*fdLimit; i++ {
		c, err := dial(t.Context(), "tcp", a.gw)
		if err != nil {
			continue
		}
		flood = append(flood, c)
	}
	time.Sleep(2 * time.Second)
	if a.Exited() {
		t.Fatalf("the agent exited under the floods:\n%s", a.Output())
	}
	if !e.tablePresent(t) {
		t.Fatal("the rules went under the floods")
	}
	// Another user (root) still goes out, through the proxy: nobody's
	// connections took only nobody's share.
	if hit := e.get(t, "http://allowed.test/"); hit.Remote != netlab.ProxyOutAddr {
		t.Fatalf("under the flood: request from %s, want the proxy", hit.Remote)
	}

	for _, c := range flood {
		c.Close()
	}
	flood = nil
	// The gateway serves again.
	cl := e.HTTPClient(e.Container)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := cl.Get("http://" + a.gw + "/_/cron/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) || a.Exited() {
			t.Fatalf("the gateway did not serve after the floods (%v):\n%s", err, a.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if hit := e.get(t, "http://allowed.test/"); hit.Remote != netlab.ProxyOutAddr {
		t.Fatalf("after the flood: request from %s, want the proxy", hit.Remote)
	}

	// However the agent ends, a signal included, the rules stay: egress
	// stays closed until an agent puts a configuration in force again.
	_ = syscall.Kill(a.Pid(), syscall.SIGTERM)
	<-a.Done()
	if !e.tablePresent(t) {
		t.Fatal("the rules went with the agent")
	}
	if code, _, _ := e.Curl("--max-time", "10", "http://"+netlab.TargetAddr+"/"); code == 0 {
		t.Fatal("egress opened when the agent stopped")
	}
}
