package identitye2e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/control/identity/identitytest"
	"deckhand/platform/platformtest"
)

var binary string

// onPostgres is set for the second run of every test: the servers then
// serve with --database-url, one fresh database per --data directory.
var onPostgres bool

// TestMain uses $DECKHAND_BIN/deckhand-control when `make test` built it,
// else builds the binary into a temporary directory, and runs every test
// twice: on the embedded store, then on PostgreSQL.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		bin, cleanup, err := platformtest.Binary("deckhand-control", "deckhand/control/cmd/deckhand-control")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		defer platformtest.StopPostgres()
		binary = bin
		code := m.Run()
		onPostgres = true
		if c := m.Run(); c != 0 {
			code = c
		}
		return code
	}())
}

var (
	dbMu   sync.Mutex
	dbURLs = map[string]string{} // --data → its database, so a restart finds its state
)

// storeFlags is what start adds for the run's engine.
func storeFlags(t *testing.T, data string) []string {
	if !onPostgres {
		return nil
	}
	dbMu.Lock()
	defer dbMu.Unlock()
	u, ok := dbURLs[data]
	if !ok {
		u = platformtest.Postgres(t)
		dbURLs[data] = u
	}
	return []string{"--database-url", u}
}

// server is one running deckhand-control.
type server struct {
	stop func()
	t    *testing.T
	url  string
	data string
	http *http.Client
}

const (
	adminEmail = "root@example.com"
	adminPass  = "Admin-pass-123"
	goodPW     = "Correct-Horse-9battery"
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
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", data,
		"--admin-email", adminEmail, "--admin-password", adminPass, "--log-level", "warn"}, storeFlags(t, data)...)
	args = append(args, flags...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("server (on PostgreSQL: %v) stderr:\n%s", onPostgres, stderr.String())
			}
		})
	}
	t.Cleanup(stop)
	found := platformtest.WatchListening(stdout, nil, nil)
	select {
	case u := <-found:
		return &server{t: t, url: u, data: data, stop: stop, http: &http.Client{Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	case <-time.After(30 * time.Second):
		t.Fatalf("deckhand-control did not start: %s", stderr.String())
	}
	return nil
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
