// Package controltest is the end-to-end harness of control-plane domains:
// it runs every test of a package twice, on the embedded store and on
// PostgreSQL (--database-url, one fresh database per --data directory), and
// starts the real `deckhand-control serve` binary, which tests drive over
// HTTP only. It is the identitye2e harness made importable, so each
// domain's e2e package (wallete2e, ...) reuses it instead of copying it.
package controltest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"deckhand/control/identity/identitytest"
	"deckhand/platform/platformtest"
)

// Bootstrap admin of every started server.
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

// Main uses $DECKHAND_BIN/deckhand-control when `make test` built it, else
// builds it, and runs the package's tests twice: embedded store, then
// PostgreSQL. Call it from TestMain.
func Main(m *testing.M) { os.Exit(run(m, true)) }

// MainOnce is Main for a package whose tests choose their own databases
// (replicas of one PostgreSQL started with StartArgs): one run.
func MainOnce(m *testing.M) { os.Exit(run(m, false)) }

// Run is Main without the exit, for a TestMain that has more of its own
// to clean up (another binary it built) before it exits.
func Run(m *testing.M) int { return run(m, true) }

// RunOnce is MainOnce without the exit, for a TestMain that has more of
// its own to clean up (another binary it built) before it exits.
func RunOnce(m *testing.M) int { return run(m, false) }

func run(m *testing.M, twice bool) int {
	bin, cleanup, err := platformtest.Binary("deckhand-control", "deckhand/control/cmd/deckhand-control")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	defer platformtest.StopPostgres()
	binary = bin
	code := m.Run()
	if !twice {
		return code
	}
	onPostgres = true
	if c := m.Run(); c != 0 {
		code = c
	}
	return code
}

// Binary is the deckhand-control under test.
func Binary() string { return binary }

// OnPostgres reports whether this run serves from PostgreSQL.
func OnPostgres() bool { return onPostgres }

// StoreFlags are the flags that select this run's engine for data (empty
// on the embedded store; the same database for the same data).
func StoreFlags(t testing.TB, data string) []string {
	if !onPostgres {
		return nil
	}
	return []string{"--database-url", DatabaseURL(t, data)}
}

// DatabaseURL is the database of --data directory data (created once).
func DatabaseURL(t testing.TB, data string) string {
	dbMu.Lock()
	defer dbMu.Unlock()
	u, ok := dbURLs[data]
	if !ok {
		u = platformtest.Postgres(t)
		dbURLs[data] = u
	}
	return u
}

// Server is one running deckhand-control.
type Server struct {
	T    testing.TB
	URL  string
	Data string
	HTTP *http.Client
	cmd  *exec.Cmd
	stop func()
	err  *platformtest.SyncBuffer
}

// Start runs `deckhand-control serve` on a fresh --data directory.
func Start(t testing.TB, flags ...string) *Server {
	t.Helper()
	return StartIn(t, t.TempDir(), flags...)
}

// StartIn runs `deckhand-control serve` on data with the run's engine,
// the bootstrap admin and extra flags, and waits until it listens.
func StartIn(t testing.TB, data string, flags ...string) *Server {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", data,
		"--admin-email", AdminEmail, "--admin-password", AdminPass, "--log-level", "warn"}, StoreFlags(t, data)...)
	return StartArgs(t, data, append(args, flags...)...)
}

// StartArgs runs the binary with exactly args (replicas pass their own
// --database-url) and waits until it says where it listens.
func StartArgs(t testing.TB, data string, args ...string) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, args...)
	// The built-in images stay out of the catalog unless a test asks for
	// them (--builtin-images beats the variable): the catalog tests count
	// exactly what they publish.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data, "DECKHAND_BUILTIN_IMAGES=false"}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &platformtest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{T: t, Data: data, cmd: cmd, err: stderr}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("server (on PostgreSQL: %v) stderr:\n%s", onPostgres, stderr.String())
			}
		})
	}
	t.Cleanup(s.stop)
	found := platformtest.WatchListening(stdout, nil, nil)
	select {
	case u := <-found:
		s.URL = u
		s.HTTP = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		return s
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("deckhand-control did not start: %s", stderr.String())
	}
	return nil
}

// Stop ends the server with SIGINT (a clean shutdown) and waits.
func (s *Server) Stop() { s.stop() }

// Kill ends the server with SIGKILL (a crash) and waits.
func (s *Server) Kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	s.stop()
}

// Reload sends SIGHUP: the server re-reads its signing keys (after a
// `keys rotate` beside it).
func (s *Server) Reload() {
	s.T.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		s.T.Fatal(err)
	}
}

// Stderr is what the server logged so far.
func (s *Server) Stderr() string { return s.err.String() }

// Resp is one response.
type Resp = identitytest.Resp

// Call sends a JSON request (see identitytest.Call).
func (s *Server) Call(method, path string, body any, bearer string, hdrs ...string) Resp {
	s.T.Helper()
	return identitytest.Call(s.T, s.HTTP, s.URL, method, path, body, bearer, hdrs...)
}

// Must fails the test unless r has status.
func (s *Server) Must(r Resp, status int) Resp {
	s.T.Helper()
	if r.Status != status {
		s.T.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	return r
}

// Data is the envelope's data object of r.
func Data(r Resp) map[string]any { d, _ := r.Body["data"].(map[string]any); return d }

// Login logs email in and returns its access token.
func (s *Server) Login(email, pw string) string {
	s.T.Helper()
	r := s.Must(s.Call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": pw}, ""), 200)
	tok, _ := Data(r)["token"].(string)
	if tok == "" {
		s.T.Fatalf("login answered no token: %s", r.Raw)
	}
	return tok
}

// Admin logs the bootstrap admin in.
func (s *Server) Admin() string { return s.Login(AdminEmail, AdminPass) }

// User creates a verified user through the admin API and returns its id
// and access token.
func (s *Server) User(admin, email string) (id, token string) {
	s.T.Helper()
	r := s.Must(s.Call("POST", "/api/v1/admin/users", map[string]any{"email": email, "password": GoodPW, "verified": true}, admin), 201)
	id, _ = Data(r)["id"].(string)
	return id, s.Login(email, GoodPW)
}

// Out runs the binary with args (a one-shot command such as `wallet
// verify`) and returns its combined output and error.
func Out(args ...string) (string, error) {
	var buf bytes.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}

// Engine names the run's engine (for sub-test and log names).
func Engine() string {
	if onPostgres {
		return "postgres"
	}
	return "bbolt"
}

// MustDo sends one request and fails the test unless the status is status.
func (s *Server) MustDo(status int, method, path string, body any, bearer string) Resp {
	s.T.Helper()
	r := s.Call(method, path, body, bearer)
	if r.Status != status {
		s.T.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Raw)
	}
	return r
}

// LoginData is the whole login result (token, refreshToken, user).
func (s *Server) LoginData(email, pw string) map[string]any {
	s.T.Helper()
	return Data(s.MustDo(200, "POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": pw}, ""))
}

// Account is a verified user with password GoodPW made the way a person
// makes one (signup, the mailed verification link, login); it answers the
// session token and the user id.
func (s *Server) Account(email string) (token, userID string) {
	s.T.Helper()
	s.MustDo(200, "POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": GoodPW}, "")
	s.MustDo(200, "POST", "/api/v1/auth/verify-email", map[string]any{"token": identitytest.MailToken(s.T, filepath.Join(s.Data, "mail"), email)}, "")
	d := s.LoginData(email, GoodPW)
	return d["token"].(string), d["user"].(map[string]any)["id"].(string)
}
