package platformtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RegenerateEnv set to 1 makes Generated write the files it checks.
const RegenerateEnv = "DECKHAND_DOCS_REGENERATE"

// Generated fails t when the committed file at path is not want, naming
// the first line that differs and how to regenerate it (make target);
// with DECKHAND_DOCS_REGENERATE=1 it writes want to path instead.
func Generated(t testing.TB, path string, want []byte, target string) {
	t.Helper()
	if os.Getenv(RegenerateEnv) == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run `make %s`)", path, err, target)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(g) && line < len(w) && g[line] == w[line] {
		line++
	}
	gl, wl := "(end of file)", "(end of file)"
	if line < len(g) {
		gl = g[line]
	}
	if line < len(w) {
		wl = w[line]
	}
	t.Errorf("%s is out of date (run `make %s`); line %d is\n\t%s\nwant\n\t%s", path, target, line+1, gl, wl)
}
