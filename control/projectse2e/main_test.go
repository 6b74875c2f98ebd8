package projectse2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"deckhand/control/events"
	"deckhand/control/identity/identitytest"
	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

var binary string

// onPostgres is set for the second run of every test (--database-url).
var onPostgres bool

// TestMain runs every test twice: on the embedded store, then on PostgreSQL.
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

type server struct {
	t     *testing.T
	url   string
	data  string
	dbURL string
	stop  func()
	http  *http.Client
	admin string
}

const (
	adminEmail = "root@example.com"
	adminPass  = "Admin-pass-123"
	userPass   = "User-pass-1234"
)

// start runs `deckhand-control serve` on a temp --data (and a fresh
// database on the PostgreSQL run) and logs the admin in.
func start(t *testing.T) *server {
	t.Helper()
	data := t.TempDir()
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--admin-email", adminEmail, "--admin-password", adminPass, "--log-level", "warn"}
	s := &server{t: t, data: data, http: &http.Client{Timeout: 30 * time.Second}}
	if onPostgres {
		s.dbURL = platformtest.Postgres(t)
		args = append(args, "--database-url", s.dbURL)
	}
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
	s.stop = func() {
		once.Do(func() {
			cancel()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("server (PostgreSQL: %v) stderr:\n%s", onPostgres, stderr.String())
			}
		})
	}
	t.Cleanup(s.stop)
	select {
	case u := <-platformtest.WatchListening(stdout, nil, nil):
		s.url = u
	case <-time.After(30 * time.Second):
		t.Fatalf("deckhand-control did not start: %s", stderr.String())
	}
	s.admin = s.login(adminEmail, adminPass)
	return s
}

type resp = identitytest.Resp

func (s *server) call(method, path string, body any, bearer string, hdrs ...string) resp {
	s.t.Helper()
	return identitytest.Call(s.t, s.http, s.url, method, path, body, bearer, hdrs...)
}

// must is call that demands status.
func (s *server) must(status int, method, path string, body any, bearer string, hdrs ...string) resp {
	s.t.Helper()
	r := s.call(method, path, body, bearer, hdrs...)
	if r.Status != status {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Raw)
	}
	return r
}

func data(r resp) map[string]any { d, _ := r.Body["data"].(map[string]any); return d }

func (s *server) login(email, pw string) string {
	s.t.Helper()
	r := s.must(200, "POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": pw}, "")
	return data(r)["token"].(string)
}

// user creates a verified account through the admin API and logs it in.
func (s *server) user(name string) (id, token string) {
	s.t.Helper()
	email := name + "@example.com"
	r := s.must(201, "POST", "/api/v1/admin/users", map[string]any{"email": email, "password": userPass, "verified": true}, s.admin)
	return data(r)["id"].(string), s.login(email, userPass)
}

// events stops the server and reads its event log from the store.
func (s *server) events() []events.Event {
	s.t.Helper()
	s.stop()
	var db *store.DB
	var err error
	if onPostgres {
		db, err = pgstore.Open(context.Background(), s.dbURL)
	} else {
		db, err = store.Open(filepath.Join(s.data, "control.db"))
	}
	if err != nil {
		s.t.Fatal(err)
	}
	defer db.Close()
	var out []events.Event
	if err := db.View(func(tx *store.Tx) error {
		var err error
		out, err = events.List(tx)
		return err
	}); err != nil {
		s.t.Fatal(err)
	}
	return out
}

// storeBytes is the embedded store file's content (bbolt run only).
func (s *server) storeBytes() []byte {
	raw, err := os.ReadFile(filepath.Join(s.data, "control.db"))
	if err != nil {
		s.t.Fatal(err)
	}
	return raw
}

var _ = bytes.Contains
