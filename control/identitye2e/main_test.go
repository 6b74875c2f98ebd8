package identitye2e_test

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/control/identity/identitytest"
)

// TestMain runs every test twice, on the embedded store and on PostgreSQL
// (controltest, the control plane's e2e harness).
func TestMain(m *testing.M) { controltest.Main(m) }

// server is one running deckhand-control.
type server struct {
	stop   func()
	t      *testing.T
	url    string
	data   string
	http   *http.Client
	stderr func() string
}

const (
	adminEmail = controltest.AdminEmail
	adminPass  = controltest.AdminPass
	goodPW     = controltest.GoodPW
)

// start runs `deckhand-control serve` with extra flags and waits until it
// says where it listens.
func start(t *testing.T, flags ...string) *server {
	t.Helper()
	return startIn(t, t.TempDir(), flags...)
}

// startIn is start on a given --data directory; stop ends it early.
func startIn(t *testing.T, data string, flags ...string) *server {
	t.Helper()
	c := controltest.StartIn(t, data, flags...)
	return &server{t: t, url: c.URL, data: data, stop: c.Stop, http: c.HTTP, stderr: c.Stderr}
}

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r resp) data() map[string]any { d, _ := r.body["data"].(map[string]any); return d }

func (r resp) str(keys ...string) string {
	var cur any = r.body
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

func (s *server) call(method, path string, body any, bearer string, hdrs ...string) resp {
	s.t.Helper()
	return s.callWith(s.http, method, path, body, bearer, hdrs...)
}

func (s *server) callWith(c *http.Client, method, path string, body any, bearer string, hdrs ...string) resp {
	s.t.Helper()
	r := identitytest.Call(s.t, c, s.url, method, path, body, bearer, hdrs...)
	return resp{status: r.Status, header: r.Header, body: r.Body, raw: r.Raw}
}

func (s *server) must(r resp, status int) resp {
	s.t.Helper()
	if r.status != status {
		s.t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// mailToken reads the newest .eml the server wrote to addr.
func (s *server) mailToken(addr string) string {
	s.t.Helper()
	return identitytest.MailToken(s.t, filepath.Join(s.data, "mail"), addr)
}

func (s *server) login(email, pw string) map[string]any {
	s.t.Helper()
	return s.must(s.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": pw}, ""), 200).data()
}

func (s *server) account(email string) map[string]any {
	s.t.Helper()
	s.must(s.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": goodPW}, ""), 200)
	s.must(s.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": s.mailToken(email)}, ""), 200)
	return s.login(email, goodPW)
}

func (s *server) refresh(header, body string) resp {
	s.t.Helper()
	return s.call("POST", "/api/v1/users/auth/refresh", map[string]any{"refreshToken": body}, header)
}

func pkce(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func oathtool(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	out, err := exec.Command("oathtool", "--totp", "-b", "-N", fmt.Sprintf("@%d", at.Unix()), secret).Output()
	if err != nil {
		t.Fatalf("oathtool (apt install oathtool): %v", err)
	}
	return strings.TrimSpace(string(out))
}

func clientFrom(t *testing.T, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}
