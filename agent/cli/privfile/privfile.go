// Package privfile reads and writes the CLI's private JSON files (the
// config with its credentials, the key cache, unfinished transfers): 0600
// in a 0700 directory, replaced atomically, and refused on read when other
// users may open them.
package privfile

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"deckhand/platform/atomicfile"
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
	return atomicfile.WriteWith(path, 0o600, atomicfile.Options{UID: -1, MkdirMode: 0o700},
		func(w io.Writer) error { _, err := w.Write(append(raw, '\n')); return err })
}
