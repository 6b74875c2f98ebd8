package catalogtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"deckhand/control/identity/identitytest"
	"deckhand/platform/platformtest"
)

// The admin every e2e server bootstraps.
const (
	AdminEmail = "root@example.com"
	AdminPass  = "Admin-pass-123"
	UserPass   = "Correct-Horse-9battery"
)

// Engines is TestMain for an end-to-end package: it finds or builds
// bin/deckhand-control, then runs every test twice, on the embedded store
// and with --database-url on a fresh PostgreSQL database per server.
func Engines(m *testing.M, binary *string, onPostgres *bool) int {
	bin, cleanup, err := platformtest.Binary("deckhand-control", "deckhand/control/cmd/deckhand-control")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	defer platformtest.StopPostgres()
	*binary = bin
	code := m.Run()
	*onPostgres = true
	if c := m.Run(); c != 0 {
		code = c
	}
	return code
}

// Server is one running `deckhand-control serve`.
type Server struct {
	T    testing.TB
	URL  string
	Data string
	HTTP *http.Client
}

// Serve starts binary on a loopback port with a temp --data directory
// (and a fresh PostgreSQL database when onPostgres), with the admin
// bootstrapped; it stops with the test.
func Serve(t testing.TB, binary string, onPostgres bool, flags ...string) *Server {
	t.Helper()
	data := t.TempDir()
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data", data,
		"--admin-email", AdminEmail, "--admin-password", AdminPass, "--log-level", "warn"}
	if onPostgres {
		args = append(args, "--database-url", platformtest.Postgres(t))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, append(args, flags...)...)
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
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("server (PostgreSQL: %v) stderr:\n%s", onPostgres, stderr.String())
			}
		})
	})
	select {
	case u := <-platformtest.WatchListening(stdout, nil, nil):
		return &Server{T: t, URL: u, Data: data, HTTP: &http.Client{Timeout: 30 * time.Second}}
	case <-time.After(30 * time.Second):
		t.Fatalf("deckhand-control did not start: %s", stderr.String())
	}
	return nil
}

// Resp is one response.
type Resp = identitytest.Resp

// Call sends a JSON request with an optional bearer credential.
func (s *Server) Call(method, path string, body any, bearer string) Resp {
	s.T.Helper()
	return identitytest.Call(s.T, s.HTTP, s.URL, method, path, body, bearer)
}

// Must is Call that fails the test unless the status is want.
func (s *Server) Must(want int, method, path string, body any, bearer string) Resp {
	s.T.Helper()
	r := s.Call(method, path, body, bearer)
	if r.Status != want {
		s.T.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Raw)
	}
	return r
}

// Login signs in and answers the access token and the user id.
func (s *Server) Login(email, password string) (token, userID string) {
	s.T.Helper()
	r := s.Must(200, "POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": password}, "")
	d, _ := r.Body["data"].(map[string]any)
	u, _ := d["user"].(map[string]any)
	token, _ = d["token"].(string)
	userID, _ = u["id"].(string)
	if token == "" || userID == "" {
		s.T.Fatalf("login answered %s", r.Raw)
	}
	return token, userID
}

// Admin is the bootstrapped admin's token.
func (s *Server) Admin() string {
	s.T.Helper()
	tok, _ := s.Login(AdminEmail, AdminPass)
	return tok
}

// User creates a verified user through the admin API and signs them in.
func (s *Server) User(adminToken, name string) (token, userID string) {
	s.T.Helper()
	email := name + "@example.com"
	s.Must(201, "POST", "/api/v1/admin/users", map[string]any{"email": email, "username": name, "password": UserPass, "verified": true}, adminToken)
	return s.Login(email, UserPass)
}
