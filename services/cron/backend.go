package cron

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"deckhand/platform/atomicfile"
	"deckhand/platform/fault"
)

// backend reads and replaces the crontab. Every write is whole-file and
// atomic, and keeps the previous content as a backup.
type backend interface {
	// read is the current content (empty when there is no crontab yet).
	read(ctx context.Context) ([]byte, error)
	// write replaces the content; prev is what read answered under the same
	// lock, kept as the backup.
	write(ctx context.Context, prev, content []byte) error
	// lock serialises read-modify-write against other deckhand processes
	// on the same crontab.
	lock() (unlock func(), err error)
	// stamp changes when the crontab may have changed ("" = unknown: read
	// it to find out).
	stamp() string
	// where names the crontab for documents and errors.
	where() string
	// backupPath is where the previous content goes.
	backupPath() string
}

// etagOf is the crontab's strong ETag.
func etagOf(content []byte) string {
	sum := sha256.Sum256(content)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// backendErr is the spec's crontab failure: 500 BACKEND_ERROR, message
// "Internal server error", details naming the operation and the OS reason.
func backendErr(op string, err error) *fault.Error {
	reason := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		reason = pe.Path + ": " + pe.Err.Error()
	}
	return &fault.Error{Code: fault.CodeBackend, Message: "Internal server error",
		Details: op + ": " + reason, Cause: err}
}

// fileBackend is a crontab file (--crontab PATH, or /etc/crontab).
type fileBackend struct {
	path string
	mode os.FileMode // of a new file
}

func (f *fileBackend) where() string      { return f.path }
func (f *fileBackend) backupPath() string { return f.path + ".bak" }

func (f *fileBackend) read(context.Context) ([]byte, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return []byte{}, nil
	}
	if err != nil {
		return nil, backendErr("read the crontab", err)
	}
	return b, nil
}

func (f *fileBackend) stamp() string {
	st, err := os.Stat(f.path)
	if err != nil {
		return "missing"
	}
	var ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = sys.Ino
	}
	return fmt.Sprintf("%d/%d/%d", st.ModTime().UnixNano(), st.Size(), ino)
}

// lock takes an exclusive flock on the crontab's directory (no lock file
// is left beside a crontab cron reads).
func (f *fileBackend) lock() (func(), error) {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, backendErr("create the crontab's directory", err)
	}
	return flock(dir)
}

func flock(path string) (func(), error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, backendErr("lock the crontab", err)
	}
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX); err != nil {
		_ = fd.Close()
		return nil, backendErr("lock the crontab", err)
	}
	return func() { _ = fd.Close() }, nil
}

// write puts content in a temporary file beside the crontab, syncs it and
// renames it over the crontab (readers see the old or the new file, never
// a part); the previous content goes to PATH.bak first.
func (f *fileBackend) write(_ context.Context, prev, content []byte) error {
	mode, uid, gid := f.mode, -1, -1
	if st, err := os.Stat(f.path); err == nil {
		mode = st.Mode().Perm()
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(sys.Uid), int(sys.Gid)
		}
		if err := atomicWrite(f.backupPath(), prev, mode, uid, gid); err != nil {
			return backendErr("write the crontab backup", err)
		}
	}
	if err := atomicWrite(f.path, content, mode, uid, gid); err != nil {
		return backendErr("write the crontab", err)
	}
	return nil
}

func atomicWrite(path string, content []byte, mode os.FileMode, uid, gid int) error {
	return atomicfile.WriteWith(path, mode, atomicfile.Options{UID: uid, GID: gid},
		func(w io.Writer) error { _, err := w.Write(content); return err })
}

// commandBackend is the user's crontab through the crontab(1) command:
// `crontab -l` reads it, `crontab -` installs it (the command itself
// writes the spool file atomically and checks the syntax). The backup and
// the lock live in the service's data directory.
type commandBackend struct {
	bin     string
	dataDir string
}

func (c *commandBackend) where() string      { return "crontab command (" + c.bin + ")" }
func (c *commandBackend) backupPath() string { return filepath.Join(c.dataDir, "crontab.bak") }
func (c *commandBackend) stamp() string      { return "" }

func (c *commandBackend) lock() (func(), error) {
	p := filepath.Join(c.dataDir, "crontab.lock")
	fd, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return nil, backendErr("lock the crontab", err)
	}
	_ = fd.Close()
	return flock(p)
}

func (c *commandBackend) read(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, c.bin, "-l")
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		// "no crontab for USER" is an empty crontab, not a failure.
		if strings.Contains(errb.String(), "no crontab for") {
			return []byte{}, nil
		}
		return nil, backendErr("read the crontab (crontab -l)", commandErr(err, errb.String()))
	}
	return out.Bytes(), nil
}

func (c *commandBackend) write(ctx context.Context, prev, content []byte) error {
	if err := atomicWrite(c.backupPath(), prev, 0o600, -1, -1); err != nil {
		return backendErr("write the crontab backup", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, c.bin, "-")
	cmd.Stdin, cmd.Stderr = bytes.NewReader(content), &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if strings.Contains(msg, "errors in crontab file") || strings.Contains(msg, "missing newline") {
			// The command checks the syntax and refused the text.
			return invalidSchedule("crontab", "the crontab command refused it: %s", firstLines(msg, 3))
		}
		return backendErr("install the crontab (crontab -)", commandErr(err, msg))
	}
	return nil
}

func commandErr(err error, stderr string) error {
	if s := strings.TrimSpace(stderr); s != "" {
		return fmt.Errorf("%w: %s", err, firstLines(s, 3))
	}
	return err
}

func firstLines(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.Join(ls, "; ")
}
