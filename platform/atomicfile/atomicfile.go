// Package atomicfile owns replacing a file whole. A reader sees the old
// content or the new, never half of either, and once Write returns the new
// content survives a crash: the temporary file is synced before the rename
// and the directory after it. Every file deckhand replaces (keys, configs,
// crontabs, cookie jars, mails, program definitions) goes through here, so
// there is one durability rule.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Options are what a few callers need beyond a mode.
type Options struct {
	// Owner chowns the file to UID/GID when the process is root (a user's
	// crontab); -1 or a non-root process leaves the owner as it is.
	UID, GID int
	// MkdirMode creates the parent directory with this mode when it is
	// missing; zero requires the directory to exist.
	MkdirMode os.FileMode
}

// Write replaces path with data, mode perm (umask does not apply).
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteWith(path, perm, Options{UID: -1}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith replaces path with what fill writes, mode perm, with opts.
// The temporary file is a dot file in the same directory, so a reader that
// skips dot files (cron reading /etc/cron.d) never picks it up.
func WriteWith(path string, perm os.FileMode, opts Options, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if opts.MkdirMode != 0 {
		if err := os.MkdirAll(dir, opts.MkdirMode); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if opts.UID >= 0 && os.Geteuid() == 0 {
		if err := tmp.Chown(opts.UID, opts.GID); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := fill(tmp); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// The rename is durable once the directory is; a failure to sync it
	// leaves a correct file that a crash might roll back, which is no
	// reason to report the write as failed.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
