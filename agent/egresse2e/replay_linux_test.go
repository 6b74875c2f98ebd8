package egresse2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/platform/platformtest/netlab"
)

// A man in the middle holding only genuine signed answers changes none of
// the rules in force: the configuration without an allow list, replayed
// within the replay window after the allow list came, and the current
// configuration's signed 304 passed on as a 404 ("no configuration":
// rules removed) are both refused; network.json stays as it was. Without
// the middle the agent follows the next change.
func TestReplayedAndRelabelledNetworkAnswersChangeNothing(t *testing.T) {
	e := newEnv(t)
	s := e.s
	body := map[string]any{"type": "socks5", "proxy": "socks5://" + socksUser + ":" + socksPass + "@" + netlab.ProxyAddr + ":1080",
		"dns_servers": []string{netlab.TargetAddr}}
	s.Must(s.Call("PUT", e.netURL, body, e.alice), 200)
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	web2 := e.Web(netlab.Target2Addr)
	a := e.startAgent(t)
	e.remote(t, "the rules in force", func(rs map[string]any) bool { return rs["is_running"] == true && rs["in_sync"] == true })
	// Without an allow list an address goes out (through the proxy).
	if code, out, errOut := e.Curl("-f", "http://"+netlab.Target2Addr+"/"); code != 0 || len(web2.Hits()) != 1 {
		t.Fatalf("before the allow list: curl exit %d %q %s, %d hits", code, out, errOut, len(web2.Hits()))
	}
	older := e.middle.Last(http.StatusOK)
	if older == nil || strings.Contains(string(older.Body), "allowed.test") {
		t.Fatalf("the middle kept no signed configuration without an allow list: %+v", older)
	}

	// The next version allows one name only.
	body["allow"] = []string{"allowed.test"}
	s.Must(s.Call("PUT", e.netURL, body, e.alice), 200)
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	e.remote(t, "the allow list", func(rs map[string]any) bool { return rs["is_running"] == true && rs["in_sync"] == true })
	saved := filepath.Join(a.data, "egress", "network.json")
	before, _ := os.ReadFile(saved)
	if !strings.Contains(string(before), "allowed.test") {
		t.Fatalf("network.json: %s", before)
	}

	holds := func(what string) {
		t.Helper()
		start, logged := e.middle.Tampered(), strings.Count(a.Output(), "failed signature verification")
		deadline := time.Now().Add(60 * time.Second)
		for e.middle.Tampered() < start+3 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the agent was not served the tampered answers:\n%s", what, a.Output())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !e.tablePresent(t) {
			t.Fatalf("%s: the rules are gone", what)
		}
		if code, _, _ := e.Curl("http://" + netlab.Target2Addr + "/"); code == 0 || len(web2.Hits()) != 1 {
			t.Fatalf("%s: an address outside the allow list went out (%d hits)", what, len(web2.Hits()))
		}
		if after, _ := os.ReadFile(saved); string(after) != string(before) {
			t.Fatalf("%s: network.json changed:\n%s", what, after)
		}
		if strings.Count(a.Output(), "failed signature verification") == logged {
			t.Fatalf("%s: the agent did not say it refused the answers:\n%s", what, a.Output())
		}
	}
	e.middle.Replay(older)
	holds("an older signed configuration replayed")
	e.middle.Relabel(http.StatusNotModified, http.StatusNotFound)
	holds("a signed 304 passed on as 404")

	e.middle.Pass()
	s.Must(s.Call("POST", e.netURL+"/stop", nil, e.alice), 200)
	e.remote(t, "stopped", func(rs map[string]any) bool { return rs["is_running"] == false && rs["in_sync"] == true })
	if e.tablePresent(t) {
		t.Fatal("table present after stop")
	}

	// A configuration deleted and created again continues the count, so
	// the agent, which refuses versions older than it saw, follows it.
	s.Must(s.Call("DELETE", e.netURL, nil, e.alice), 200)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(func() string { b, _ := os.ReadFile(saved); return string(b) }(), `"none":true`) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never applied the deletion:\n%s", a.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Must(s.Call("PUT", e.netURL, body, e.alice), 200)
	s.Must(s.Call("POST", e.netURL+"/start", nil, e.alice), 200)
	e.remote(t, "the re-created configuration", func(rs map[string]any) bool { return rs["is_running"] == true && rs["in_sync"] == true })
	if !e.tablePresent(t) {
		t.Fatal("the re-created configuration put no rules in force")
	}

	// The highest version seen outlives the agent: restarted on data that
	// saw version 1000, it refuses the control plane's lower one.
	a.Stop()
	if err := os.WriteFile(saved, []byte(`{"etag":"none","none":true,"highest":1000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := e.startAgentIn(t, a.data)
	for deadline = time.Now().Add(30 * time.Second); !strings.Contains(b.Output(), "older than version 1000"); {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted agent did not refuse the older version:\n%s", b.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e.tablePresent(t) {
		t.Fatal("a version older than one seen was applied after a restart")
	}
}
