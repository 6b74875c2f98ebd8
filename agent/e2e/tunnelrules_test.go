package e2e_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
		"--services", "tunnel", "--log-level", "warn", "--control-url", control.URL, "--container-id", "c1", "--token", "agt_test")
	a.ready(t)
	for _, port := range []int{listenPort, controlPort, base + 6} {
		status, m, raw := get(t, "http://"+gw+"/_/tunnel/proxy/"+strconv.Itoa(port)+"/")
		if status != 403 || m["code"] != "PORT_DENIED" {
			t.Errorf("port %d: %d %s", port, status, raw)
		}
	}
}

// TestTunnelledAppSeesNoGatewayCredential: the credential the gateway
// consumed (the matched group's header, cookie or query parameter) never
// reaches the tunnelled app, while the request's other headers, cookies
// and parameters do; the app learns the client's host and scheme from
// X-Forwarded-Host / X-Forwarded-Proto, and its Host is its own address.
func TestTunnelledAppSeesNoGatewayCredential(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"host": r.Host, "xfh": r.Header.Get("X-Forwarded-Host"), "xfp": r.Header.Get("X-Forwarded-Proto"),
			"query": r.URL.RawQuery, "cookie": r.Header.Get("Cookie"), "auth": r.Header.Get("Authorization"),
			"key": r.Header.Get("X-Key"), "other": r.Header.Get("X-Other"),
		})
	}))
	t.Cleanup(app.Close)
	port := app.Listener.Addr().(*net.TCPAddr).Port
	doc := `{"project":"p1","container":"c1","default":"deny","groups":{
		"hdr":{"type":"token","header":"X-Key","value":"hdr-secret"},
		"ck":{"type":"token","cookie":"deckhand_token","value":"cookie-secret"},
		"qp":{"type":"token","param":"tok","value":"query-secret"},
		"pw":{"type":"password","username":"u","password":"pw-secret"}},
		"permissions":{"hdr":{"http":true},"ck":{"http":true},"qp":{"http":true},"pw":{"http":true}}}`
	perm := filepath.Join(t.TempDir(), "perm.json")
	if err := os.WriteFile(perm, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, "--services", "tunnel", "--permissions-file", perm, "--domain", "example.test")
	url := "http://" + a.gw + "/_/tunnel/proxy/" + strconv.Itoa(port) + "/page?keep=1"
	for _, c := range []struct {
		name   string
		query  string
		hdr    []string
		secret string
	}{
		{"header", "", []string{"X-Key", "hdr-secret"}, "hdr-secret"},
		{"cookie", "", []string{"Cookie", "a=1; deckhand_token=cookie-secret; b=2"}, "cookie-secret"},
		{"query", "&tok=query-secret&z=9", nil, "query-secret"},
		{"basic", "", []string{"Authorization", "Basic dTpwdy1zZWNyZXQ="}, "dTpwdy1zZWNyZXQ="},
	} {
		status, m, raw := get(t, url+c.query, append([]string{"X-Other", "kept", "Host", "dev.example.test:8443"}, c.hdr...)...)
		if status != 200 {
			t.Fatalf("%s: %d %s", c.name, status, raw)
		}
		if strings.Contains(string(raw), c.secret) {
			t.Errorf("%s: the app saw the gateway's credential: %s", c.name, raw)
		}
		if m["other"] != "kept" || !strings.HasPrefix(m["query"].(string), "keep=1") {
			t.Errorf("%s: the app lost the request's own headers or query: %s", c.name, raw)
		}
		if m["xfh"] != "dev.example.test:8443" || m["xfp"] != "http" || m["host"] != "localhost:"+strconv.Itoa(port) {
			t.Errorf("%s: forwarded host %v, proto %v, Host %v", c.name, m["xfh"], m["xfp"], m["host"])
		}
	}
	status, m, raw := get(t, url, "Cookie", "a=1; deckhand_token=cookie-secret; b=2")
	if status != 200 || m["cookie"] != "a=1; b=2" {
		t.Errorf("other cookies: %d %s", status, raw)
	}
	status, m, raw = get(t, url+"&tok=query-secret&z=9")
	if status != 200 || m["query"] != "keep=1&z=9" {
		t.Errorf("other parameters: %d %s", status, raw)
	}
}
