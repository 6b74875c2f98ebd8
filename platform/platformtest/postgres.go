package platformtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deckhand/platform/proc"
)

// Postgres returns the URL of a fresh, empty database on this test
// binary's shared PostgreSQL server, dropped when the test ends. The
// server (Debian's postgresql package, which scripts/setup.sh installs) is
// started on first use: initdb into a temporary directory, run as the
// postgres user when the tests run as root, on a free 127.0.0.1 port, with
// fsync off. It stops when the test binary exits, however it exits: a
// watchdog process stops it and removes its directory.
func Postgres(t testing.TB) string {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = startPG() })
	if sharedErr != nil {
		t.Fatalf("shared PostgreSQL: %v", sharedErr)
	}
	return shared.CreateDB(t)
}

var (
	sharedOnce sync.Once
	shared     *PGServer
	sharedErr  error
)

// StopPostgres stops the shared server, if one started; TestMain may call it
// after m.Run (the watchdog does it otherwise).
func StopPostgres() {
	if shared != nil {
		shared.Close()
	}
}

// PGServer is one PostgreSQL server for tests. Tests that stop and restart
// the database (fault tests) take a private one from NewPGServer; the rest
// share one through Postgres.
type PGServer struct {
	bin, dir, data string
	port           int
	cred           *syscall.Credential
	log            SyncBuffer

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	watchdog *exec.Cmd
	lifeline *os.File // its closing (our exit) tells the watchdog to clean up
	dbMu     sync.Mutex
	closed   bool
}

// NewPGServer starts a private server that the test's cleanup stops.
func NewPGServer(t testing.TB) *PGServer {
	t.Helper()
	s, err := startPG()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Port is the server's TCP port on 127.0.0.1.
func (s *PGServer) Port() int { return s.port }

// URL is the address of database db.
func (s *PGServer) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// CreateDB creates a fresh database, dropped when the test ends, and
// returns its URL.
func (s *PGServer) CreateDB(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	if err := s.admin("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database %s: %v\n%s", name, err, s.log.String())
	}
	t.Cleanup(func() {
		if err := s.admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			s.mu.Lock()
			running := s.cmd != nil
			s.mu.Unlock()
			if running {
				t.Errorf("drop database %s: %v", name, err)
			}
		}
	})
	return s.URL(name)
}

// admin runs one statement on the postgres database.
func (s *PGServer) admin(sql string) error {
	s.dbMu.Lock() // CREATE DATABASE copies template1: one at a time
	defer s.dbMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// pgBin finds the newest installed server's binaries.
func pgBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin: run scripts/setup.sh (Debian package postgresql)")
}

// pgTempBase is $TMPDIR unless running as root with a $TMPDIR the postgres
// user cannot traverse (under /root, say); then /tmp.
func pgTempBase() string {
	base := os.TempDir()
	if os.Geteuid() != 0 {
		return base
	}
	for p := base; p != "/" && p != "."; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
	}
	return base
}

func startPG() (*PGServer, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(pgTempBase(), "deckhand-pg-")
	if err != nil {
		return nil, err
	}
	s := &PGServer{bin: bin, dir: dir, data: filepath.Join(dir, "data")}
	if os.Geteuid() == 0 { // postgres refuses to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user (Debian package postgresql): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.startWatchdog(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		s.Close()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	for try := 0; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.Close()
			return nil, err
		}
		s.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if err = s.Start(); err == nil {
			return s, nil
		}
		if try == 4 {
			s.Close()
			return nil, err
		}
	}
}

// startWatchdog starts a shell that waits for this process to end (its
// stdin, our lifeline pipe, reaches EOF), then stops the server and
// removes its directory: no postmaster outlives a killed test binary.
func (s *PGServer) startWatchdog() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	script := `trap '' INT TERM HUP
read _
pid=$(head -n1 "$1/data/postmaster.pid" 2>/dev/null)
if [ -n "$pid" ]; then
  kill -QUIT "$pid" 2>/dev/null
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
fi
rm -rf "$1"`
	wd := exec.Command("/bin/sh", "-c", script, "pg-watchdog", s.dir)
	wd.Stdin = r
	wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // out of the terminal's reach
	if err := wd.Start(); err != nil {
		r.Close()
		w.Close()
		return err
	}
	r.Close()
	s.watchdog, s.lifeline = wd, w
	return nil
}

// Start runs the server (again, after Stop) and waits until it accepts
// connections.
func (s *PGServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data, "-p", strconv.Itoa(s.port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "shared_buffers=16MB", "-c", "max_connections=300",
		"-c", "max_pred_locks_per_transaction=256", "-c", "log_min_messages=fatal")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = &s.log, &s.log
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			s.cmd, s.exited = cmd, exited
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited at start: %s", s.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return fmt.Errorf("postgres did not accept connections in 30s: %v\n%s", err, s.log.String())
		}
	}
}

// Stop shuts the server down (fast shutdown: sessions are cut) and waits
// until it and its backends have exited.
func (s *PGServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = proc.KillGroup(s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	// Backends leave with the postmaster; reap any straggler of the group.
	_ = proc.KillGroup(s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd = nil
}

// Close stops the server for good and removes its directory.
func (s *PGServer) Close() {
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.lifeline != nil {
		s.lifeline.Close() // the watchdog finds no server and removes the directory
		_ = s.watchdog.Wait()
	}
	os.RemoveAll(s.dir)
}
