package reqpolicy_test

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/platform/reqpolicy"
)

const corsApp = "https://app.example.com"

// TestCORSDecision: which requests the policy answers with CORS headers,
// which it answers as a preflight, and what a preflight allows.
func TestCORSDecision(t *testing.T) {
	t.Parallel()
	p, err := reqpolicy.NewRequestPolicy("localhost", []string{corsApp})
	if err != nil {
		t.Fatal(err)
	}
	cloud, _ := reqpolicy.NewRequestPolicy("containers.example.net", nil)
	req := func(method, origin string, kv ...string) reqpolicy.Request {
		if origin != "" {
			kv = append(kv, "origin", origin)
		}
		return policyRequest(append(kv, "method", method)...)
	}
	cases := []struct {
		name string
		pol  *reqpolicy.RequestPolicy
		req  reqpolicy.Request
		want reqpolicy.CORS
		code string // refused with this code (and no CORS)
	}{
		{"curl: no origin", p, req("POST", ""), reqpolicy.CORS{}, ""},
		{"own origin: no headers", p, req("POST", "http://127.0.0.1:7700"), reqpolicy.CORS{}, ""},
		{"own origin behind the gateway", p, req("POST", "http://127.0.0.1:7700", "host", "127.0.0.1:7703", "fwd", "127.0.0.1:7700"), reqpolicy.CORS{}, ""},
		{"loopback name on the own port: allowed, but no CORS", p, req("GET", "http://p-c-files-1.s.localhost:7700"),
			reqpolicy.CORS{}, ""},
		{"allowed foreign origin", p, req("POST", corsApp), reqpolicy.CORS{Origin: corsApp}, ""},
		{"allowed foreign origin, error routes too", p, req("DELETE", corsApp), reqpolicy.CORS{Origin: corsApp}, ""},
		{"sibling under the cloud domain: allowed, but no CORS", cloud, req("GET", "https://p-c-tunnel-1.s.containers.example.net", "host", "p-c-terminal-1.s.containers.example.net"),
			reqpolicy.CORS{}, ""},
		{"sibling under the cloud domain: its preflight is not answered", cloud, req("OPTIONS", "https://p-c-tunnel-1.s.containers.example.net",
			"host", "p-c-terminal-1.s.containers.example.net", "acrm", "POST", "acrh", "content-type"), reqpolicy.CORS{}, ""},
		{"refused origin", p, req("POST", "http://evil.example"), reqpolicy.CORS{}, fault.CodeForbidden},
		{"refused preflight", p, req("OPTIONS", "http://evil.example", "acrm", "POST", "acrh", "content-type"), reqpolicy.CORS{}, fault.CodeForbidden},
		{"preflight under a foreign Host", p, req("OPTIONS", corsApp, "host", "evil.example", "acrm", "POST"), reqpolicy.CORS{}, fault.CodeMisdirected},
		{"OPTIONS without Access-Control-Request-Method is a request", p, req("OPTIONS", corsApp), reqpolicy.CORS{Origin: corsApp}, ""},
		{"preflight, JSON POST with Authorization", p, req("OPTIONS", corsApp, "acrm", "POST", "acrh", "authorization,content-type"),
			reqpolicy.CORS{Origin: corsApp, Preflight: true, AllowHeaders: "authorization, content-type"}, ""},
		{"preflight, no headers asked", p, req("OPTIONS", corsApp, "acrm", "PUT"), reqpolicy.CORS{Origin: corsApp, Preflight: true}, ""},
		{"preflight, own origin still answered, never routed", p, req("OPTIONS", "http://127.0.0.1:7700", "acrm", "PATCH"),
			reqpolicy.CORS{Origin: "http://127.0.0.1:7700", Preflight: true}, ""},
		{"preflight, a header that is not a token", p, req("OPTIONS", corsApp, "acrm", "POST", "acrh", "content-type, bad header"),
			reqpolicy.CORS{Origin: corsApp, Preflight: true}, ""},
		{"preflight, proxy-owned headers are not echoed", p, req("OPTIONS", corsApp, "acrm", "POST",
			"acrh", "x-forwarded-host,if-match,x-deckhand-identity-subject,forwarded,X-Real-IP,idempotency-key"),
			reqpolicy.CORS{Origin: corsApp, Preflight: true, AllowHeaders: "if-match, idempotency-key"}, ""},
		{"preflight, private network access", p, req("OPTIONS", corsApp, "acrm", "GET", "pna", "true"),
			reqpolicy.CORS{Origin: corsApp, Preflight: true, PrivateNetwork: true}, ""},
	}
	for _, tc := range cases {
		got, err := tc.pol.Decide(tc.req)
		code := ""
		if err != nil {
			code = err.Code
		}
		if code != tc.code || got != tc.want {
			t.Errorf("%s: got %+v %q, want %+v %q", tc.name, got, code, tc.want, tc.code)
		}
	}
}

// TestCORSApplyVary: Origin joins Vary (every line of it), never twice,
// and applying twice (service, then gateway) gives one set of headers.
func TestCORSApplyVary(t *testing.T) {
	t.Parallel()
	c := reqpolicy.CORS{Origin: corsApp}
	for _, tc := range []struct {
		name string
		vary []string
		want string
	}{
		{"none", nil, "Origin"},
		{"one", []string{"Accept-Encoding"}, "Accept-Encoding, Origin"},
		{"two lines", []string{"Accept-Encoding", "Cookie, Accept"}, "Accept-Encoding, Cookie, Accept, Origin"},
		{"already there", []string{"origin, Accept-Encoding"}, "origin, Accept-Encoding"},
		{"star", []string{"*"}, "*"},
	} {
		var h fasthttp.ResponseHeader
		for _, v := range tc.vary {
			h.Add("Vary", v)
		}
		c.Apply(&h)
		c.Apply(&h)
		if got := h.PeekAll("Vary"); len(got) != 1 || string(got[0]) != tc.want {
			t.Errorf("%s: Vary %q, want %q", tc.name, got, tc.want)
		}
		if got := h.PeekAll("Access-Control-Allow-Origin"); len(got) != 1 || string(got[0]) != corsApp {
			t.Errorf("%s: Allow-Origin %q", tc.name, got)
		}
		if string(h.Peek("Access-Control-Allow-Credentials")) != "true" {
			t.Errorf("%s: no Allow-Credentials", tc.name)
		}
	}
	var h fasthttp.ResponseHeader
	reqpolicy.CORS{}.Apply(&h)
	if h.Len() != 0 && len(h.Peek("Access-Control-Allow-Origin")) != 0 {
		t.Fatal("the zero CORS set headers")
	}
}

// TestHostCORS drives a real Host on the network: preflights are answered
// before routing and authentication, answers and errors to an allowed
// foreign origin carry the headers, a refused origin's do not.
func TestHostCORS(t *testing.T) {
	t.Parallel()
	pol, _ := reqpolicy.NewRequestPolicy("localhost", []string{corsApp})
	var reached atomic.Int32
	never := platform.AuthenticatorFunc(func(c fiber.Ctx) (*auth.Principal, error) {
		if c.Get("Authorization") == "Bearer good" {
			return &auth.Principal{UserID: "u1"}, nil
		}
		return nil, &fault.Error{Code: fault.CodeUnauthorized, Message: "who are you"}
	})
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "t"}, Policy: pol, Logger: quiet, Auth: never, BodyLimit: 1024},
		[]platform.Route{
			{Method: http.MethodPost, Path: "/api/v1/do", Summary: "do",
				Handler: func(c fiber.Ctx) error {
					reached.Add(1)
					c.Set("Vary", "Accept-Encoding")
					c.Set("ETag", `"7"`)
					return c.Status(201).JSON(map[string]string{"ok": "yes"})
				}},
			{Method: http.MethodOptions, Path: "/api/v1/do", Summary: "options of do", Policy: platform.Public,
				Handler: func(c fiber.Ctx) error { reached.Add(1); return c.SendStatus(200) }},
		})
	url := platformtest.Serve(t, h)
	own := strings.TrimSuffix(url, "/")
	send := func(method, path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(`{"x":1}`))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return platformtest.DoResponse(t, req)
	}
	// The preflight: no credentials, answered before auth and routing.
	resp, body := send("OPTIONS", "/api/v1/do", "Origin", corsApp, "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization,content-type", "Access-Control-Request-Private-Network", "true")
	want := map[string]string{
		"Access-Control-Allow-Origin": corsApp, "Access-Control-Allow-Credentials": "true",
		"Access-Control-Allow-Methods": reqpolicy.CORSAllowMethods, "Access-Control-Allow-Headers": "authorization, content-type",
		"Access-Control-Allow-Private-Network": "true", "Access-Control-Max-Age": "600",
	}
	if resp.StatusCode != 204 || body != "" {
		t.Fatalf("preflight: %d %q", resp.StatusCode, body)
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("preflight %s = %q, want %q", k, got, v)
		}
	}
	if v := resp.Header.Get("Vary"); !strings.Contains(v, "Origin") || !strings.Contains(v, "Access-Control-Request-Headers") {
		t.Errorf("preflight Vary %q", v)
	}
	// The same preflight on an unknown path: still answered, still 204.
	if resp, _ := send("OPTIONS", "/nowhere", "Origin", corsApp, "Access-Control-Request-Method", "DELETE"); resp.StatusCode != 204 {
		t.Errorf("preflight on an unknown path: %d", resp.StatusCode)
	}
	// A refused origin's preflight: the policy's 403, no CORS headers.
	resp, body = send("OPTIONS", "/api/v1/do", "Origin", "http://evil.example", "Access-Control-Request-Method", "POST")
	if resp.StatusCode != 403 || !strings.Contains(body, "FORBIDDEN") || resp.Header.Get("Access-Control-Allow-Origin") != "" ||
		resp.Header.Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("refused preflight: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("a preflight reached a handler %d times", n)
	}
	// The real request, with its credential.
	resp, body = send("POST", "/api/v1/do", "Origin", corsApp, "Authorization", "Bearer good")
	if resp.StatusCode != 201 || !strings.Contains(body, `"ok":"yes"`) || reached.Load() != 1 {
		t.Fatalf("allowed POST: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != corsApp || resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("allowed POST headers: %v", resp.Header)
	}
	if v := resp.Header.Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding, Origin" {
		t.Errorf("Vary replaced, not appended: %q", v)
	}
	expose := strings.Split(resp.Header.Get("Access-Control-Expose-Headers"), ", ")
	for _, hd := range []string{"ETag", "X-Request-Id", "X-Journal-Cursor", "X-Service-Signature", "Retry-After", "Location", "Content-Disposition"} {
		if !slices.Contains(expose, hd) {
			t.Errorf("Expose-Headers lacks %s: %q", hd, expose)
		}
	}
	// Errors to an allowed origin are readable: 401, 404, and 413 (the
	// server refuses the body; Fiber still runs the kernel first).
	for _, tc := range []struct {
		method, path string
		status       int
		hdr          []string
	}{
		{"POST", "/api/v1/do", 401, nil},
		{"GET", "/nowhere", 404, nil},
		{"OPTIONS", "/api/v1/do", 200, nil}, // not a preflight: routed
	} {
		resp, body := send(tc.method, tc.path, append([]string{"Origin", corsApp}, tc.hdr...)...)
		if resp.StatusCode != tc.status || resp.Header.Get("Access-Control-Allow-Origin") != corsApp {
			t.Errorf("%s %s: %d %q %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), body)
		}
	}
	big, _ := http.NewRequest("POST", url+"/api/v1/do", strings.NewReader(strings.Repeat("x", 4096)))
	big.Header.Set("Origin", corsApp)
	if resp, _ := platformtest.DoResponse(t, big); resp.StatusCode != 413 || resp.Header.Get("Access-Control-Allow-Origin") != corsApp {
		t.Errorf("body too large: %d %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	// Own origin and no origin: no CORS headers at all.
	for _, hdr := range [][]string{{"Origin", own, "Authorization", "Bearer good"}, {"Authorization", "Bearer good"}} {
		resp, body := send("POST", "/api/v1/do", hdr...)
		if resp.StatusCode != 201 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("%v: %d %v %s", hdr, resp.StatusCode, resp.Header, body)
		}
	}
	// The service's document says so.
	if st, doc, raw := platformtest.Do(t, mustRequest(t, "GET", url+"/openapi.json")); st != 200 ||
		!strings.Contains(doc["info"].(map[string]any)["description"].(string), "Access-Control-Allow-Private-Network") {
		t.Errorf("openapi: %d %.300s", st, raw)
	}
	// A refused origin's request: 403, no CORS headers.
	resp, _ = send("POST", "/api/v1/do", "Origin", "http://evil.example", "Authorization", "Bearer good")
	if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("refused POST: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestCORSExposesServiceHeaders: every X-* response header a service sets
// for its clients is in CORSExposeHeaders, so a cross-origin page can read
// it. A new one fails here until it is listed.
func TestCORSExposesServiceHeaders(t *testing.T) {
	t.Parallel()
	set := regexp.MustCompile(`\.(?:Set|Add)\("(X-[A-Za-z0-9-]+)"`)
	// Headers set on requests a service forwards, or meant for proxies
	// and the browser itself, not for a page's script.
	notForPages := func(h string) bool {
		return strings.HasPrefix(h, "X-Forwarded-") || h == "X-Accel-Buffering" || h == "X-Content-Type-Options" || h == "X-Frame-Options"
	}
	found := 0
	for _, root := range []string{"../../services", "../../display", ".."} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range set.FindAllSubmatch(src, -1) {
				h := string(m[1])
				found++
				if !notForPages(h) && !slices.Contains(reqpolicy.CORSExposeHeaders, h) {
					t.Errorf("%s sets %s, which is not in reqpolicy.CORSExposeHeaders", path, h)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 8 {
		t.Fatalf("found only %d X-* headers set: the scan is broken", found)
	}
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
