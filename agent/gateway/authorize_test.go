package gateway_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"deckhand/agent/gateway"
	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
)

// seen is what an Authorizer read from the facts (they are valid only
// during the call: the gateway reuses its request buffers).
type seen struct {
	cookie, query string
	client, peer  net.IP
}

// fixedAuth admits requests carrying X-Let-In and names them; it records
// the facts it saw.
type fixedAuth struct{ saw chan seen }

func (a fixedAuth) Authorize(r gateway.Request, t gateway.Target) (gateway.Identity, *fault.Error) {
	a.saw <- seen{r.Cookie("sess"), r.Query("key"), r.Client(), r.RemoteIP}
	if r.Header("X-Let-In") == "" {
		return gateway.Identity{}, &fault.Error{Code: fault.CodeUnauthorized, Details: t.Service, Message: "who are you"}
	}
	port := 0
	if r.Header("X-Port") != "" {
		port = 3000
	}
	return gateway.Identity{Group: "crew", Type: "token", Subject: "line1\r\nX-Evil: 1", Port: port}, nil
}

// admitAll lets every request through.
type admitAll struct{}

func (admitAll) Authorize(gateway.Request, gateway.Target) (gateway.Identity, *fault.Error) {
	return gateway.Identity{}, nil
}

// TestLoopbackOnlyRefusesProxiedClients: behind a trusted proxy the client
// is the proxy's X-Forwarded-For hop, which is not loopback even though
// the connection is.
func TestLoopbackOnlyRefusesProxiedClients(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "", func(c *gateway.Config) { c.TrustProxyHeaders = true })
	if status, body, _ := f.get(t, "", "/_/cron/health", "X-Forwarded-For", "203.0.113.4"); status != 403 || body["code"] != "FORBIDDEN" {
		t.Fatalf("proxied client without a document: %d %v", status, body)
	}
	if status, _, raw := f.get(t, "", "/_/cron/health"); status != 200 {
		t.Fatalf("loopback client: %d %s", status, raw)
	}
	forged := gateway.Request{RemoteIP: net.ParseIP("10.0.0.8"), Source: net.ParseIP("127.0.0.1")}
	if _, err := (gateway.LoopbackOnly{}).Authorize(forged, gateway.Target{Service: "cron"}); err == nil {
		t.Fatal("a private peer naming 127.0.0.1 in X-Forwarded-For passed as loopback")
	}
}

func TestIdentityHeadersSetByTheGatewayOnly(t *testing.T) {
	t.Parallel()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := map[string]string{}
		for k := range r.Header {
			if strings.HasPrefix(k, contract.IdentityHeaderPrefix) || k == "X-Evil" || k == platform.AuthorizedPortHeader {
				out[k] = strings.Join(r.Header.Values(k), "|")
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(echo.Close)
	auth := fixedAuth{saw: make(chan seen, 8)}
	f := newFixture(t, "proj", "ctr", func(c *gateway.Config) {
		c.Authorizer = auth
		c.TrustProxyHeaders = true
		c.Backend = func(string) (string, bool) { return strings.TrimPrefix(echo.URL, "http://"), true }
	})
	// Refused: the container error body, nothing forwarded.
	status, body, _ := f.get(t, "", "/_/notes/x?key=q1", "X-Deckhand-Identity-Group", "admins")
	if status != 401 || body["code"] != "UNAUTHORIZED" {
		t.Fatalf("refusal: %d %v", status, body)
	}
	<-auth.saw
	// Admitted: client copies gone, the gateway's set, the subject made one line.
	req, _ := http.NewRequest(http.MethodGet, f.url+"/_/notes/x?key=q1", nil)
	req.Header.Set("X-Let-In", "1")
	req.Header.Set("Cookie", "sess=c1; other=2")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Add("X-Deckhand-Identity-Group", "admins")
	req.Header.Add("x-deckhand-identity-extra", "forged")
	req.Header.Add(platform.AuthorizedPortHeader, "22") // a client's copy never passes
	status, body, _ = platformtest.Do(t, req)
	if status != 200 {
		t.Fatalf("admitted: %d %v", status, body)
	}
	want := map[string]any{"X-Deckhand-Identity-Group": "crew", "X-Deckhand-Identity-Type": "token", "X-Deckhand-Identity-Subject": "line1__X-Evil: 1"}
	if len(body) != len(want) {
		t.Fatalf("service saw identity headers %v, want %v", body, want)
	}
	for k, v := range want {
		if body[k] != v {
			t.Fatalf("service saw identity headers %v, want %v", body, want)
		}
	}
	r := <-auth.saw
	if r.cookie != "c1" || r.query != "q1" || !r.client.Equal(net.ParseIP("203.0.113.9")) || !r.peer.IsLoopback() {
		t.Fatalf("facts: %+v", r)
	}
	// The port a decision admitted reaches the service in
	// AuthorizedPortHeader (the tunnel dials no other), replacing a
	// client's copy.
	req.Header.Set("X-Port", "1")
	status, body, _ = platformtest.Do(t, req)
	if status != 200 || body[platform.AuthorizedPortHeader] != "3000" {
		t.Fatalf("admitted port: %d %v", status, body)
	}
	<-auth.saw
}
