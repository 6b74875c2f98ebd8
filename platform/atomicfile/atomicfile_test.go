package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"deckhand/platform/atomicfile"
)

func TestWriteReplacesWholeWithMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "new" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %v, want new 0600", got, fi.Mode().Perm())
	}
	assertOnly(t, dir, "f.json")
}

func TestFailedFillKeepsOldAndLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := atomicfile.WriteWith(path, 0o600, atomicfile.Options{UID: -1}, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("content %q after a failed write, want old", got)
	}
	assertOnly(t, dir, "f")
}

func TestMkdirMode(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := atomicfile.Write(filepath.Join(dir, "x"), []byte("1"), 0o600); err == nil {
		t.Fatal("a missing directory without MkdirMode was created")
	}
	err := atomicfile.WriteWith(filepath.Join(dir, "x"), 0o640, atomicfile.Options{UID: -1, MkdirMode: 0o700}, func(w io.Writer) error {
		_, err := w.Write([]byte("1"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v, want 0700", fi.Mode().Perm())
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(names) {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Fatalf("dir holds %v, want only %v (a temporary file was left)", got, names)
	}
}
