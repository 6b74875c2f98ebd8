// Package privfile reads and writes the CLI's private JSON files (the
// config with its credentials, the key cache, unfinished transfers): 0600
// in a 0700 directory, replaced atomically, and refused on read when other
// users may open them.
package privfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Read decodes the JSON file at path into v, refusing a file that
// users other than its owner may read or write (it holds credentials).
func Read(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is open to other users (mode %#o): it holds credentials; chmod 600 it", path, fi.Mode().Perm())
	}
	if err := json.NewDecoder(f).Decode(v); err != nil {
		return fmt.Errorf("%s: unreadable (not the JSON deckhand writes): %w", path, err)
	}
	return nil
}

// Write writes v as JSON to path, 0600, through a temporary file and
// a rename, so a reader never sees half a file and a crash keeps the old one.
func Write(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename it is gone already
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
