// Package controltest runs the real deckhand-control binary for the
// control plane's end-to-end packages, once on the embedded store and once
// on PostgreSQL: Main runs a package's tests twice, Start serves one
// instance (with --database-url on a fresh database in the second run),
// Store opens a stopped instance's store so a test can read what the
// server wrote (the event log).
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

	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

// The bootstrap admin every Start creates.
const (
	AdminEmail    = "root@example.com"
	AdminPassword = "Admin-pass-123"
)

var (
	binary     string
	onPostgres bool

	dbMu   sync.Mutex
	dbURLs = map[string]string{} // --data → its database, so a restart finds its state
)

// Main uses $DECKHAND_BIN/deckhand-control when `make test` built it, else
// builds the binary, and runs the tests twice: on the embedded store, then
// on PostgreSQL. TestMain is `os.Exit(controltest.Main(m))`.
func Main(m *testing.M) int {
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
}

// OnPostgres reports whether this is the PostgreSQL run.
func OnPostgres() bool { return onPostgres }

// Server is one running deckhand-control.
type Server struct {
	t    testing.TB
	URL  string
	Data string
	// DBURL is the PostgreSQL database (PostgreSQL run only).
	DBURL string
	// HTTP does not follow redirects.
	HTTP *http.Client
	stop func()
}

// Stop ends the server (Cleanup does too).
func (s *Server) Stop() { s.stop() }

// Start serves on a fresh --data directory.
func Start(t testing.TB, flags ...string) *Server { return StartIn(t, t.TempDir(), flags...) }

// StartIn serves on data (the same database again when data was served
// before, so a restart finds its state), with the bootstrap admin and
// extra flags, and waits until it listens.
func StartIn(t testing.TB, data string, flags ...string) *Server {
	t.Helper()
	s := &Server{t: t, Data: data, HTTP: &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data", data,
		"--admin-email", AdminEmail, "--admin-password", AdminPassword, "--log-level", "warn"}
	if onPostgres {
		dbMu.Lock()
		u, ok := dbURLs[data]
		if !ok {
			u = platformtest.Postgres(t)
			dbURLs[data] = u
		}
		dbMu.Unlock()
		s.DBURL = u
		args = append(args, "--database-url", u)
	}
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
	select {
	case u := <-platformtest.WatchListening(stdout, nil, nil):
		s.URL = u
	case <-time.After(30 * time.Second):
		t.Fatalf("deckhand-control did not start: %s", stderr.String())
	}
	return s
}

// Store stops the server and opens its store (closed at Cleanup).
func (s *Server) Store() *store.DB {
	s.t.Helper()
	s.Stop()
	var db *store.DB
	var err error
	if s.DBURL != "" {
		db, err = pgstore.Open(context.Background(), s.DBURL)
	} else {
		db, err = store.Open(filepath.Join(s.Data, "control.db"))
	}
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { db.Close() })
	return db
}
