package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := readTokenFile(write("ok", "agt_abc\n", 0o400)); err != nil || tok != "agt_abc" {
		t.Fatalf("0400 file: %q %v", tok, err)
	}
	for name, tc := range map[string]struct {
		body string
		mode os.FileMode
		want string
	}{
		"open":  {"agt_abc", 0o644, "open to other users"},
		"empty": {"\n", 0o600, "one token on one line"},
		"two":   {"agt_a\nagt_b\n", 0o600, "one token on one line"},
	} {
		if _, err := readTokenFile(write(name, tc.body, tc.mode)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if _, err := readTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file was read")
	}
}
