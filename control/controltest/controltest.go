// Package controltest is the end-to-end harness of control-plane domains:
// Main builds the real deckhand-control binary and runs a package's tests
// twice, on the embedded store and then on PostgreSQL (a fresh database
// per --data directory); Start runs `serve` on a loopback port and Server
// drives it over HTTP only.
package controltest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"deckhand/control/identity/identitytest"
	"deckhand/platform/platformtest"
)

// Credentials of the bootstrap admin and a password signup accepts.
const (
	AdminEmail = "root@example.com"
	AdminPass  = "Admin-pass-123"
	GoodPW     = "Correct-Horse-9battery"
)

var (
	binary     string
	onPostgres bool
	dbMu       sync.Mutex
	dbURLs     = map[string]string{} // --data → its database, so a restart finds its state
)

// Main is a package's TestMain: it uses $DECKHAND_BIN/deckhand-control
// when `make test` built it, else builds it, and runs every test on the
// embedded store, then again on PostgreSQL.
func Main(m *testing.M) {
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

// OnPostgres reports whether this run serves with --database-url.
func OnPostgres() bool { return onPostgres }

// Engine names the run's engine (for sub-test and log names).
func Engine() string {
	if onPostgres {
		return "postgres"
	}
	return "bbolt"
}

func storeFlags(t testing.TB, data string) []string {
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

// Server is one running deckhand-control.
type Server struct {
	T    testing.TB
	URL  string
	Data string
	HTTP *http.Client
	Stop func()
}

// Start runs `deckhand-control serve` (bootstrap admin included) with
// extra flags on a fresh --data directory.
func Start(t testing.TB, flags ...string) *Server {
	t.Helper()
	return StartIn(t, t.TempDir(), flags...)
}

// StartIn is Start on a given --data directory.
func StartIn(t testing.TB, data string, flags ...string) *Server {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", data,
		"--admin-email", AdminEmail, "--admin-password", AdminPass, "--log-level", "warn"}, storeFlags(t, data)...)
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
	var stderr platformtest.SyncBuffer
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
				t.Logf("server (%s) stderr:\n%s", Engine(), stderr.String())
			}
		})
	}
	t.Cleanup(stop)
	select {
	case u := <-platformtest.WatchListening(stdout, nil, nil):
		return &Server{T: t, URL: u, Data: data, Stop: stop, HTTP: &http.Client{Timeout: 60 * time.Second,
			Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	case <-time.After(30 * time.Second):
		t.Fatalf("deckhand-control did not start: %s", stderr.String())
	}
	return nil
}

// Resp is one response.
type Resp = identitytest.Resp

// Data is the envelope's data object.
func Data(r Resp) map[string]any { d, _ := r.Body["data"].(map[string]any); return d }

// Call sends one request (body JSON-encoded) with an optional bearer.
func (s *Server) Call(method, path string, body any, bearer string, hdrs ...string) Resp {
	s.T.Helper()
	return identitytest.Call(s.T, s.HTTP, s.URL, method, path, body, bearer, hdrs...)
}

// Must is Call that fails the test unless the status is status.
func (s *Server) Must(status int, method, path string, body any, bearer string) Resp {
	s.T.Helper()
	r := s.Call(method, path, body, bearer)
	if r.Status != status {
		s.T.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Raw)
	}
	return r
}

// Login answers the login result's data (token, refreshToken, user).
func (s *Server) Login(email, pw string) map[string]any {
	s.T.Helper()
	return Data(s.Must(200, "POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": pw}, ""))
}

// Admin is a session token of the bootstrap admin.
func (s *Server) Admin() string {
	s.T.Helper()
	return s.Login(AdminEmail, AdminPass)["token"].(string)
}

// Account is a verified user with password GoodPW (signup, the mailed
// verification link, login); it answers the session token and user id.
func (s *Server) Account(email string) (token, userID string) {
	s.T.Helper()
	s.Must(200, "POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": GoodPW}, "")
	s.Must(200, "POST", "/api/v1/auth/verify-email", map[string]any{"token": identitytest.MailToken(s.T, filepath.Join(s.Data, "mail"), email)}, "")
	d := s.Login(email, GoodPW)
	return d["token"].(string), d["user"].(map[string]any)["id"].(string)
}
