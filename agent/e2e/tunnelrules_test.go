package e2e_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"deckhand/platform/platformtest"
)

// TestTunnelRulesJudgeTheTunnelledPort drives the real agent with a
// permissions document: through the gateway's tunnel (/proxy/{port}/ and
// the WebSocket route) the rules are matched against the tunnelled port,
// program ssh for 22 and http for the rest, and the agent's own ports
// (gateway, every service port through base+16) stay refused whatever the
// rules say.
func TestTunnelRulesJudgeTheTunnelledPort(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"app":"reached"}`)
	}))
	t.Cleanup(app.Close)
	appPort := app.Listener.Addr().(*net.TCPAddr).Port
	doc := fmt.Sprintf(`{"project":"p1","container":"c1","default":"deny","groups":{
		"web":{"type":"token","header":"X-Web","value":"w"},
		"wide":{"type":"token","header":"X-Wide","value":"v"},
		"shell":{"type":"token","header":"X-Ssh","value":"s"}},
		"permissions":{"web":{"http":[%d]},"wide":{"http":true,"ssh":false},"shell":{"ssh":true}}}`, appPort)
	perm := filepath.Join(t.TempDir(), "perm.json")
	if err := os.WriteFile(perm, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, "--services", "tunnel,cron", "--permissions-file", perm)
	gw := "http://" + a.gw + "/_/tunnel"
	ws := func(port int) string { return gw + "/api/v1/tunnel/ws?port=" + strconv.Itoa(port) }
	px := func(port int) string { return gw + "/proxy/" + strconv.Itoa(port) + "/" }
	wsHdr := []string{"Upgrade", "websocket", "Connection", "Upgrade", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, c := range []struct {
		name string
		url  string
		ws   bool
		cred []string
		want int
		code string
	}{
		{"http [app] reaches the app", px(appPort), false, []string{"X-Web", "w"}, 200, ""},
		{"http [app] not another port", px(appPort + 1), false, []string{"X-Web", "w"}, 403, "FORBIDDEN"},
		{"http [app] not 22", px(22), false, []string{"X-Web", "w"}, 403, "FORBIDDEN"},
		{"http [app] ws not 22", ws(22), true, []string{"X-Web", "w"}, 403, "FORBIDDEN"},
		{"ssh false stops /proxy/22", px(22), false, []string{"X-Wide", "v"}, 403, "FORBIDDEN"},
		{"ssh false stops ws 22", ws(22), true, []string{"X-Wide", "v"}, 403, "FORBIDDEN"},
		{"ssh true is not http", px(appPort), false, []string{"X-Ssh", "s"}, 403, "FORBIDDEN"},
		{"http true: the gateway's port", px(a.base), false, []string{"X-Wide", "v"}, 403, "PORT_DENIED"},
		{"http true: files' port", px(a.base + 2), false, []string{"X-Wide", "v"}, 403, "PORT_DENIED"},
		{"http true: the tunnel's port", ws(a.base + 6), true, []string{"X-Wide", "v"}, 403, "PORT_DENIED"},
		{"http true: base+16", px(a.base + 16), false, []string{"X-Wide", "v"}, 403, "PORT_DENIED"},
		{"no credential", px(appPort), false, nil, 401, "UNAUTHORIZED"},
	} {
		hdr := append([]string(nil), c.cred...)
		if c.ws {
			hdr = append(hdr, wsHdr...)
		}
		status, m, raw := get(t, c.url, hdr...)
		if status != c.want || (c.code != "" && m["code"] != c.code) || (c.want == 200 && m["app"] != "reached") {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, raw, c.want, c.code)
		}
	}
	// ssh true passes the gateway for port 22: the tunnel dials it (an
	// sshd answers or nothing listens; either way not the gateway's 403).
	if status, m, raw := get(t, ws(22), append([]string{"X-Ssh", "s"}, wsHdr...)...); status == 401 || (status == 403 && m["code"] == "FORBIDDEN") {
		t.Errorf("ssh true, port 22: %d %s", status, raw)
	}
}

// TestTunnelRefusesTheAgentsOwnPorts: the gateway's --listen port (apart
// from the port base) and a control plane's port on loopback are the
// agent's own and are never tunnelled, even to a trusted local client
// with no document in force.
func TestTunnelRefusesTheAgentsOwnPorts(t *testing.T) {
	t.Parallel()
	control := httptest.NewServer(http.NotFoundHandler()) // answers nothing signed: no document
	t.Cleanup(control.Close)
	controlPort := control.Listener.Addr().(*net.TCPAddr).Port
	base := freeBase(t)
	listenPort := platformtest.FreePortBase(t, 0)
	data := t.TempDir()
	gw := "127.0.0.1:" + strconv.Itoa(listenPort)
	a := startRaw(t, nil, gw, base, data, "run", "--data", data, "--listen", gw, "--port-base", strconv.Itoa(base),
		"--services", "tunnel", "--log-level", "warn", "--control-url", control.URL, "--container-id", "c1", "--token", "svc_test")
	a.ready(t)
	for _, port := range []int{listenPort, controlPort, base + 6} {
		status, m, raw := get(t, "http://"+gw+"/_/tunnel/proxy/"+strconv.Itoa(port)+"/")
		if status != 403 || m["code"] != "PORT_DENIED" {
			t.Errorf("port %d: %d %s", port, status, raw)
		}
	}
}
