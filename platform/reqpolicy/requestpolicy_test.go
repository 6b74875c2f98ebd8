package reqpolicy_test

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/platform/reqpolicy"
)

func TestRequestPolicyCheck(t *testing.T) {
	t.Parallel()
	p, err := reqpolicy.NewRequestPolicy("localhost", []string{"https://app.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	cloud, err := reqpolicy.NewRequestPolicy("containers.example.net", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := policyRequest
	cases := []struct {
		name string
		pol  *reqpolicy.RequestPolicy
		req  reqpolicy.Request
		code string // "" = allowed
	}{
		{"curl: no origin", p, h(), ""},
		{"same origin", p, h("origin", "http://127.0.0.1:7700"), ""},
		{"same origin, ipv6", p, h("host", "[::1]:7700", "origin", "http://[::1]:7700"), ""},
		{"same origin, localhost", p, h("host", "localhost:7700", "origin", "http://localhost:7700"), ""},
		{"cross-site page", p, h("origin", "http://evil.example"), fault.CodeForbidden},
		{"cross-site GET too", p, h("method", "GET", "origin", "http://evil.example"), fault.CodeForbidden},
		{"null origin", p, h("origin", "null"), fault.CodeForbidden},
		{"loopback on another port", p, h("origin", "http://[::1]:9"), fault.CodeForbidden},
		{"127.0.0.1 on another port", p, h("origin", "http://127.0.0.1:9"), fault.CodeForbidden},
		{"evil.localhost on another port", p, h("origin", "http://evil.localhost"), fault.CodeForbidden},
		{"name under a loopback domain, same port", p, h("origin", "http://p-c-files-1.s.localhost:7700"), ""},
		{"configured origin", p, h("origin", "https://app.example.com"), ""},
		{"configured origin, other scheme", p, h("origin", "http://app.example.com"), fault.CodeForbidden},
		{"configured host is served", p, h("host", "app.example.com", "origin", "https://app.example.com"), ""},
		{"rebinding host", p, h("host", "evil.example:7700", "origin", "http://evil.example:7700"), fault.CodeMisdirected},
		{"rebinding GET without origin", p, h("method", "GET", "host", "evil.example:7700"), fault.CodeMisdirected},
		{"empty host", p, h("host", ""), fault.CodeMisdirected},
		{"other IP literal", p, h("host", "10.0.0.9:7700"), fault.CodeMisdirected},
		{"unspecified address (status of --listen 0.0.0.0)", p, h("method", "GET", "host", "0.0.0.0:7700"), ""},
		{"gateway's forwarded host", p, h("host", "127.0.0.1:7703", "fwd", "127.0.0.1:7700", "origin", "http://127.0.0.1:7700"), ""},
		{"forwarded host must pass the host check", p, h("host", "127.0.0.1:7703", "fwd", "evil.example:7700", "origin", "http://evil.example:7700"), fault.CodeMisdirected},
		{"cross-site without origin", p, h("method", "GET", "site", "cross-site", "mode", "no-cors"), fault.CodeForbidden},
		{"same-site without origin", p, h("method", "GET", "site", "same-site", "mode", "cors"), fault.CodeForbidden},
		{"cross-site navigation", p, h("method", "GET", "site", "cross-site", "mode", "navigate", "dest", "document"), ""},
		{"cross-site navigation, HEAD", p, h("method", "HEAD", "site", "cross-site", "mode", "navigate", "dest", "document"), ""},
		{"cross-site iframe", p, h("method", "GET", "site", "cross-site", "mode", "navigate", "dest", "iframe"), fault.CodeForbidden},
		{"cross-site frame", p, h("method", "GET", "site", "cross-site", "mode", "navigate", "dest", "frame"), fault.CodeForbidden},
		{"cross-site embed", p, h("method", "GET", "site", "cross-site", "mode", "navigate", "dest", "embed"), fault.CodeForbidden},
		{"cross-site object", p, h("method", "GET", "site", "cross-site", "mode", "navigate", "dest", "object"), fault.CodeForbidden},
		{"same-site iframe", p, h("method", "GET", "site", "same-site", "mode", "navigate", "dest", "iframe"), fault.CodeForbidden},
		{"cross-site navigation without a destination", p, h("method", "GET", "site", "cross-site", "mode", "navigate"), fault.CodeForbidden},
		{"same-origin iframe", p, h("method", "GET", "site", "same-origin", "mode", "navigate", "dest", "iframe"), ""},
		{"cross-site form POST navigation", p, h("site", "cross-site", "mode", "navigate"), fault.CodeForbidden},
		{"same-origin fetch", p, h("site", "same-origin", "origin", "http://127.0.0.1:7700"), ""},
		{"cross-site with an allowed origin", p, h("site", "cross-site", "origin", "https://app.example.com"), ""},
		{"cloud: sibling service origin", cloud, h("host", "p-c-terminal-1.s.containers.example.net",
			"origin", "https://p-c-files-1.s.containers.example.net"), ""},
		{"cloud: lookalike domain", cloud, h("host", "p-c-terminal-1.s.containers.example.net",
			"origin", "https://containers.example.net.evil.example"), fault.CodeForbidden},
		{"cloud: foreign host", cloud, h("host", "containers.example.net.evil.example"), fault.CodeMisdirected},
	}
	for _, tc := range cases {
		err := tc.pol.Check(tc.req)
		got := ""
		if err != nil {
			got = err.Code
			if err.Message == "" || err.Details == "" {
				t.Errorf("%s: error without message or details: %+v", tc.name, err)
			}
		}
		if got != tc.code {
			t.Errorf("%s: got %q, want %q (%+v)", tc.name, got, tc.code, err)
		}
	}
}

// policyRequest is a POST to 127.0.0.1:7700 changed by key/value pairs.
func policyRequest(kv ...string) reqpolicy.Request {
	r := reqpolicy.Request{Method: http.MethodPost, Host: "127.0.0.1:7700"}
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1]; kv[i] {
		case "method":
			r.Method = v
		case "host":
			r.Host = v
		case "fwd":
			r.ForwardedHost = v
		case "origin":
			r.Origin, r.HasOrigin = v, true
		case "site":
			r.SecFetchSite = v
		case "mode":
			r.SecFetchMode = v
		case "dest":
			r.SecFetchDest = v
		case "acrm":
			r.PreflightMethod = v
		case "acrh":
			r.PreflightHeaders = v
		case "pna":
			r.PreflightPrivateNetwork = v == "true"
		default:
			panic("policyRequest: unknown key " + kv[i])
		}
	}
	return r
}

func TestRequestPolicyLocalIP(t *testing.T) {
	t.Parallel()
	p, _ := reqpolicy.NewRequestPolicy("localhost", nil)
	r := reqpolicy.Request{Method: "GET", Host: "10.0.0.9:7700", LocalIP: net.ParseIP("10.0.0.9")}
	if err := p.Check(r); err != nil {
		t.Fatalf("the address the connection arrived on was refused: %v", err)
	}
}

func TestRequestPolicyBadOrigins(t *testing.T) {
	t.Parallel()
	for _, o := range []string{"app.example.com", "ftp://x", "https://x/path", "https://u@x", "*"} {
		if _, err := reqpolicy.NewRequestPolicy("localhost", []string{o}); err == nil || !strings.Contains(err.Error(), "--allowed-origins") {
			t.Errorf("%q: %v", o, err)
		}
	}
}

// TestHostAppliesPolicy: a Host with a Policy refuses before any route, with
// the container error body, on the network and for every method.
func TestHostAppliesPolicy(t *testing.T) {
	t.Parallel()
	pol, _ := reqpolicy.NewRequestPolicy("localhost", nil)
	reached := 0
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "t"}, Policy: pol, Logger: quiet},
		[]platform.Route{{Method: http.MethodPost, Path: "/api/v1/do", Summary: "do",
			Handler: func(c fiber.Ctx) error { reached++; return c.SendStatus(201) }}})
	url := platformtest.Serve(t, h)
	send := func(host string, hdr ...string) (int, map[string]any, string) {
		req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/do", strings.NewReader(`{"x":1}`))
		req.Header.Set("Content-Type", "text/plain")
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return platformtest.Do(t, req)
	}
	if st, m, raw := send("", "Origin", "http://evil.example"); st != 403 || m["code"] != "FORBIDDEN" || len(m) != 3 {
		t.Fatalf("cross-site: %d %s", st, raw)
	}
	if st, m, raw := send("evil.example:1234"); st != 421 || m["code"] != "MISDIRECTED_REQUEST" {
		t.Fatalf("foreign host: %d %s", st, raw)
	}
	// A client-set X-Forwarded-Host is only the gateway's when the peer is
	// this machine; here it is, so it must still pass the host check.
	if st, _, raw := send("", "X-Forwarded-Host", "evil.example", "Origin", "http://evil.example"); st != 421 {
		t.Fatalf("forged forwarded host: %d %s", st, raw)
	}
	if st, _, raw := send("", "X-Forwarded-Host", "203.0.113.77:7700", "Origin", "http://203.0.113.77:7700"); st != 421 {
		t.Fatalf("forwarded host, an IP of another machine: %d %s", st, raw)
	}
	if reached != 0 {
		t.Fatalf("a refused request reached the handler %d times", reached)
	}
	if st, _, raw := send(""); st != 201 {
		t.Fatalf("curl: %d %s", st, raw)
	}
	if st, _, raw := send("", "Origin", strings.TrimSuffix(url, "/")); st != 201 {
		t.Fatalf("own origin: %d %s", st, raw)
	}
	// The gateway serves a Host naming the address the client connected
	// to; the service, behind it on another address, takes any address of
	// this machine for it.
	if ip := ownNonLoopbackIP(); ip != "" {
		fh := net.JoinHostPort(ip, "7700")
		if st, _, raw := send("", "X-Forwarded-Host", fh, "Origin", "http://"+fh); st != 201 {
			t.Fatalf("forwarded host %s, an address of this machine: %d %s", fh, st, raw)
		}
	}
}

func ownNonLoopbackIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
