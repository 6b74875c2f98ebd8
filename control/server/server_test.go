package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/control/domain"
	"deckhand/control/server"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/signing"

	"github.com/gofiber/fiber/v3"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type greetReq struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func (r *greetReq) Validate() error {
	if r.Name == "" {
		return fault.Invalid("name", "is required")
	}
	return nil
}

// testDomain stands in for a later domain: one public POST that decodes a
// body, one guarded Fiber route, one guarded net/http route.
type testDomain struct {
	booted  bool
	release chan struct{} // lets the stream route finish
}

func (d *testDomain) Bootstrap(context.Context) error { d.booted = true; return nil }

func (d *testDomain) Routes() []platform.Route {
	if d.release == nil {
		d.release = make(chan struct{})
		close(d.release)
	}
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/test/greet", Policy: platform.Public, Summary: "greet", Body: greetReq{},
			Handler: func(c fiber.Ctx) error {
				var req greetReq
				if err := platform.DecodeBytes(c.Body(), &req); err != nil {
					return err
				}
				return platform.Respond(c, http.StatusOK, "Hello "+req.Name, req)
			}},
		{Method: http.MethodGet, Path: "/api/v1/test/private", Summary: "needs a credential",
			Handler: func(c fiber.Ctx) error {
				p, _ := auth.FromContext(c.Context())
				return platform.Respond(c, http.StatusOK, "secret", map[string]any{"user": p.UserID})
			}},
		{Method: http.MethodGet, Path: "/api/v1/test/private-http", Summary: "needs a credential (net/http)",
			HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"statusCode":200,"message":"from net/http"}`)
			})},
		{Method: http.MethodGet, Path: "/api/v1/test/stream", Policy: platform.Public, Summary: "event stream",
			Handler: func(c fiber.Ctx) error {
				c.Set("Content-Type", "text/event-stream")
				return c.SendStreamWriter(func(w *bufio.Writer) {
					w.WriteString("data: first\n\n")
					w.Flush()
					<-d.release
					w.WriteString("data: last\n\n")
				})
			}},
		{Method: http.MethodGet, Path: "/api/v1/test/ip", Policy: platform.Public, Summary: "caller's IP",
			Handler: func(c fiber.Ctx) error {
				return platform.Respond(c, http.StatusOK, "ip", map[string]string{"ip": platform.ClientIP(c)})
			}},
		{Method: http.MethodGet, Path: "/api/v1/test/kib", Policy: platform.Public, Summary: "1 KiB body",
			Handler: func(c fiber.Ctx) error { return c.Send(kib) }},
	}
}

var kib = bytes.Repeat([]byte("k"), 1024)

// withTest adds d as a domain with one line, as the server's list does.
func withTest(d *testDomain) server.Option {
	return server.WithDomain("test", func(domain.Env[domain.NoConfig]) (*testDomain, error) { return d, nil })
}

// bearerAuth accepts "Bearer good" only.
type bearerAuth struct{}

func (bearerAuth) Authenticate(c fiber.Ctx) (*auth.Principal, error) {
	if c.Get("Authorization") != "Bearer good" {
		return nil, fault.Errorf(fault.CodeUnauthorized, "Invalid credential")
	}
	return &auth.Principal{UserID: "u1", Role: auth.RoleUser, Kind: auth.KindSession, SessionID: "s1"}, nil
}

func baseConfig(t *testing.T) server.Config {
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Data = t.TempDir()
	cfg.Logger = quiet
	return cfg
}

type running struct {
	srv *server.Server
	url string
	v   *signing.Verifier
}

func start(t *testing.T, cfg server.Config, opts ...server.Option) *running {
	t.Helper()
	srv, err := server.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		srv.Close()
	})
	return &running{srv: srv, url: srv.URL(),
		v: signing.NewVerifier(signing.VerifierOptions{Source: signing.HTTPKeySource(nil, srv.URL())})}
}

// do sends a request and checks the response signature (or its absence
// when signing is off).
func (r *running) do(t *testing.T, method, path, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, r.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if r.srv.Keys() != nil {
		if _, err := r.v.VerifyResponse(resp, raw); err != nil {
			t.Fatalf("%s %s: signature: %v (header %q)", method, path, err, resp.Header.Get(signing.Header))
		}
	} else if h := resp.Header.Get(signing.Header); h != "" {
		t.Fatalf("%s %s: signed although signing is off: %q", method, path, h)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
	}
	return resp.StatusCode, m
}

func TestRoutesEnvelopesAndGuard(t *testing.T) {
	t.Parallel()
	dom := &testDomain{}
	r := start(t, baseConfig(t), withTest(dom), server.WithAuthenticator(bearerAuth{}))
	if !dom.booted {
		t.Fatal("Bootstrap of the domain did not run")
	}
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		errText, msgHas          string
	}{
		{"regions", "GET", "/api/v1/auth/available-regions", "", nil, 200, "", "Available regions"},
		{"public key", "GET", "/api/v1/meta/public-key", "", nil, 200, "", "Signing key set"},
		{"unknown route", "GET", "/api/v1/nope", "", nil, 404, "Not Found", "no such route"},
		{"wrong method", "DELETE", "/api/v1/meta/public-key", "", nil, 405, "Method Not Allowed", "method not allowed"},
		{"good body", "POST", "/api/v1/test/greet", `{"name":"ada","count":2}`, nil, 200, "", "Hello ada"},
		{"malformed JSON", "POST", "/api/v1/test/greet", `{"name":`, nil, 400, "Bad Request", "body"},
		{"wrong type", "POST", "/api/v1/test/greet", `{"name":"a","count":"two"}`, nil, 400, "Bad Request", "count: must be an integer"},
		{"unknown field", "POST", "/api/v1/test/greet", `{"name":"a","admin":true}`, nil, 400, "Bad Request", "admin: unknown field"},
		{"rule broken", "POST", "/api/v1/test/greet", `{}`, nil, 400, "Bad Request", "name: is required"},
		{"trailing data", "POST", "/api/v1/test/greet", `{"name":"a"} {}`, nil, 400, "Bad Request", "unexpected data"},
		{"guarded, no credential", "GET", "/api/v1/test/private", "", nil, 401, "Unauthorized", "Invalid credential"},
		{"guarded, bad credential", "GET", "/api/v1/test/private", "", []string{"Authorization", "Bearer bad"}, 401, "Unauthorized", "Invalid credential"},
		{"guarded, good credential", "GET", "/api/v1/test/private", "", []string{"Authorization", "Bearer good"}, 200, "", "secret"},
		{"guarded net/http, no credential", "GET", "/api/v1/test/private-http", "", nil, 401, "Unauthorized", ""},
		{"guarded net/http, good credential", "GET", "/api/v1/test/private-http", "", []string{"Authorization", "Bearer good"}, 200, "", "from net/http"},
	}
	for _, tc := range cases {
		status, body := r.do(t, tc.method, tc.path, tc.body, tc.hdr...)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d (%v)", tc.name, status, tc.status, body)
			continue
		}
		if int(body["statusCode"].(float64)) != tc.status {
			t.Errorf("%s: envelope statusCode %v", tc.name, body["statusCode"])
		}
		if tc.errText != "" && body["error"] != tc.errText {
			t.Errorf("%s: error %q, want %q", tc.name, body["error"], tc.errText)
		}
		if msg, _ := body["message"].(string); !strings.Contains(msg, tc.msgHas) {
			t.Errorf("%s: message %q lacks %q", tc.name, msg, tc.msgHas)
		}
		if s := jsonString(body); strings.Contains(s, "goroutine") || strings.Contains(s, "json: ") {
			t.Errorf("%s: internals leak: %s", tc.name, s)
		}
	}
	if status, body := r.do(t, "GET", "/api/v1/test/private", "", "Authorization", "Bearer good"); status != 200 ||
		body["data"].(map[string]any)["user"] != "u1" {
		t.Errorf("authenticator's locals not visible to the handler: %v", body)
	}
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

// A streamed body reaches the client as it is written (neither the access
// log nor the signer may drain it first) and carries no signature, since
// its bytes are unknown when the headers go out.
func TestStreamedResponseIsNotBuffered(t *testing.T) {
	t.Parallel()
	dom := &testDomain{release: make(chan struct{})}
	r := start(t, baseConfig(t), withTest(dom))
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(r.url + "/api/v1/test/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if h := resp.Header.Get(signing.Header); h != "" {
		t.Errorf("stream signed: %q", h)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first event before the writer finished: %q %v", line, err)
	}
	close(dom.release)
	rest, _ := io.ReadAll(br)
	if string(rest) != "\ndata: last\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

func TestTrustProxyHeaders(t *testing.T) {
	t.Parallel()
	for _, trust := range []bool{false, true} {
		cfg := baseConfig(t)
		cfg.TrustProxyHeaders = trust
		r := start(t, cfg, withTest(&testDomain{}))
		_, body := r.do(t, "GET", "/api/v1/test/ip", "", "X-Forwarded-For", "203.0.113.9")
		want := "127.0.0.1"
		if trust {
			want = "203.0.113.9"
		}
		if got := body["data"].(map[string]any)["ip"]; got != want {
			t.Errorf("trust-proxy-headers=%v: client IP %v, want %s", trust, got, want)
		}
	}
}

// With the built-in authenticator (identity), another domain's guarded
// routes refuse missing and bogus credentials.
func TestGuardUsesIdentityAuthenticator(t *testing.T) {
	t.Parallel()
	r := start(t, baseConfig(t), withTest(&testDomain{}))
	for _, p := range []string{"/api/v1/test/private", "/api/v1/test/private-http"} {
		for _, hdr := range [][]string{nil, {"Authorization", "Bearer good"}, {"Authorization", "Bearer svc_bogus"}} {
			status, body := r.do(t, "GET", p, "", hdr...)
			if status != 401 || body["error"] != "Unauthorized" {
				t.Errorf("%s %v: %d %v", p, hdr, status, body)
			}
		}
	}
	if status, _ := r.do(t, "POST", "/api/v1/test/greet", `{"name":"x"}`); status != 200 {
		t.Errorf("public route: %d", status)
	}
}

// The client announces a body over the 4 MiB limit and waits: the server
// answers 413 from the headers alone (a client that kept writing would see
// the connection closed under it instead of the answer).
func TestOversizedBodyIs413AndSigned(t *testing.T) {
	t.Parallel()
	r := start(t, baseConfig(t), withTest(&testDomain{}))
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/test/greet HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"name\":\"", 5<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	if _, err := r.v.Verify(context.Background(), resp.Header.Get(signing.Header), "/api/v1/test/greet", raw); err != nil {
		t.Fatalf("413 signature: %v", err)
	}
	var body map[string]any
	json.Unmarshal(raw, &body)
	if resp.StatusCode != 413 || body["error"] != "Request Entity Too Large" || body["statusCode"] != float64(413) {
		t.Fatalf("oversized: %d %s", resp.StatusCode, raw)
	}
}

func TestSigningOff(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	cfg.Signing = false
	r := start(t, cfg)
	status, body := r.do(t, "GET", "/api/v1/meta/public-key", "")
	if status != 503 || body["error"] != "SIGNING_NOT_CONFIGURED" || body["statusCode"] != float64(503) {
		t.Fatalf("public key without signing: %d %v", status, body)
	}
	if _, err := os.Stat(filepath.Join(cfg.Data, "keys")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("keys directory made although signing is off: %v", err)
	}
	if status, _ := r.do(t, "GET", "/api/v1/auth/available-regions", ""); status != 200 {
		t.Errorf("regions without signing: %d", status)
	}
}

func TestRegionsFile(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	os.WriteFile(filepath.Join(cfg.Data, "regions.json"),
		[]byte(`{"regions":[{"region":"lab-1","country":"NL","city":"Delft","available":true},{"region":"lab-2","country":"NL","city":"Leiden","available":false}]}`), 0o600)
	r := start(t, cfg)
	_, body := r.do(t, "GET", "/api/v1/auth/available-regions", "")
	regions := body["data"].(map[string]any)["regions"].([]any)
	if len(regions) != 2 || regions[0].(map[string]any)["region"] != "lab-1" || regions[1].(map[string]any)["available"] != false {
		t.Fatalf("regions: %v", regions)
	}
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(t *testing.T, c *server.Config)
		want string
	}{
		{"postgres unreachable", func(t *testing.T, c *server.Config) { c.DatabaseURL = "postgres://u:hunter2@127.0.0.1:1/db" },
			`--database-url: PostgreSQL at host 127.0.0.1 port 1, database "db"`},
		{"postgres without database", func(t *testing.T, c *server.Config) { c.DatabaseURL = "postgres://u:hunter2@127.0.0.1:1" }, "names no database"},
		{"not postgres", func(t *testing.T, c *server.Config) { c.DatabaseURL = "mysql://u:hunter2@h/db" }, "must be postgres://"},
		{"fee range", func(t *testing.T, c *server.Config) { c.TransferFeeBPS = 10000 }, "--transfer-fee-bps"},
		{"header timeout too short", func(t *testing.T, c *server.Config) { c.HeaderTimeout = time.Millisecond }, "--header-timeout: must be between"},
		{"header timeout too long", func(t *testing.T, c *server.Config) { c.HeaderTimeout = time.Hour }, "--header-timeout: must be between"},
		{"admin half", func(t *testing.T, c *server.Config) { c.AdminEmail = "a@b.c" }, "give both or neither"},
		{"public url", func(t *testing.T, c *server.Config) { c.PublicURL = "ftp://x" }, "--public-url"},
		{"smtp url hides secret", func(t *testing.T, c *server.Config) { c.SMTPURL = "mail://user:hunter2@x" }, "--smtp-url"},
		{"log level", func(t *testing.T, c *server.Config) { c.LogLevel = "loud" }, "--log-level"},
		{"missing regions file", func(t *testing.T, c *server.Config) { c.RegionsFile = filepath.Join(c.Data, "none.json") }, "regions file"},
		{"bad regions file", func(t *testing.T, c *server.Config) {
			os.WriteFile(filepath.Join(c.Data, "regions.json"), []byte(`[{"region":"a","zone":1}]`), 0o600)
		}, "unknown field"},
		{"duplicate region", func(t *testing.T, c *server.Config) {
			os.WriteFile(filepath.Join(c.Data, "regions.json"), []byte(`[{"region":"a"},{"region":"a"}]`), 0o600)
		}, "listed twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := baseConfig(t)
			tc.edit(t, &cfg)
			srv, err := server.New(cfg)
			if err == nil {
				srv.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("err %q, want it to mention %q (and no secret)", err, tc.want)
			}
		})
	}
}

func TestSecondServerOnSameDataFailsFast(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	first, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	_, err = server.New(cfg)
	if !errors.Is(err, server.ErrDataInUse) || !strings.Contains(err.Error(), "control.db") {
		t.Fatalf("second server: %v", err)
	}
}

func TestOpenAPIListsRoutesAndPublicOnes(t *testing.T) {
	t.Parallel()
	r := start(t, baseConfig(t), withTest(&testDomain{}))
	resp, err := http.Get(r.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if _, err := r.v.VerifyResponse(resp, raw); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Security *[]any `json:"security"`
		} `json:"paths"`
		Components struct {
			Schemas struct {
				Error struct {
					Required []string `json:"required"`
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(doc.Components.Schemas.Error.Required, ","); got != "error,message,statusCode" {
		t.Errorf("documented error body requires %q, want the control-plane envelope", got)
	}
	for path, public := range map[string]bool{
		"/api/v1/auth/available-regions": true, "/api/v1/meta/public-key": true, "/api/v1/test/private": false,
	} {
		op, ok := doc.Paths[path]["get"]
		if !ok {
			t.Errorf("%s missing from the document", path)
			continue
		}
		if got := op.Security != nil && len(*op.Security) == 0; got != public {
			t.Errorf("%s: public in document = %v, want %v", path, got, public)
		}
	}
}
