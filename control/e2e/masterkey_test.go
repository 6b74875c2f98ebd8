package e2e_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Through the binary: the master key is its own 0600 file
// (default <data>/master.key, or --master-key-file / DECKHAND_MASTER_KEY_FILE),
// sessions survive a restart with it, and control.db copied alone (a
// backup) does not start: not with a fresh key, not with another key, and
// without leaving a key file behind.
func TestMasterKeyOutsideTheStore(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	const email, password = "keys@example.com", "Master-Key-Pass-42!"
	p := serve(t, data, nil, "--admin-email", email, "--admin-password", password)
	body, _ := json.Marshal(map[string]any{"email": email, "password": password})
	access, _ := p.do("POST", "/api/v1/users/auth/login", body).data()["token"].(string)
	if access == "" {
		t.Fatal("no access token")
	}
	p.stop()
	keyPath := filepath.Join(data, "master.key")
	if st, err := os.Stat(keyPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("master.key: %v", err)
	}
	key, _ := os.ReadFile(keyPath)
	db, _ := os.ReadFile(filepath.Join(data, "control.db"))
	if strings.Contains(string(db), strings.TrimSpace(string(key))) {
		t.Fatal("control.db holds the master key")
	}

	refused := func(name string, env []string, args ...string) string {
		t.Helper()
		_, stderr, err := run(t, env, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
		var exit interface{ ExitCode() int }
		if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(stderr, "master key does not open this store") {
			t.Fatalf("%s: err %v, stderr %q", name, err, stderr)
		}
		return stderr
	}
	// The backup: control.db alone in a new directory.
	backup := t.TempDir()
	if err := os.WriteFile(filepath.Join(backup, "control.db"), db, 0o600); err != nil {
		t.Fatal(err)
	}
	refused("backup alone", nil, "--data", backup)
	if _, err := os.Stat(filepath.Join(backup, "master.key")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused start left a master.key: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	os.WriteFile(other, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	refused("backup with another key", nil, "--data", backup, "--master-key-file", other)
	if raw, _ := os.ReadFile(other); string(raw) != strings.Repeat("ab", 32)+"\n" {
		t.Fatal("the refused start changed the key file")
	}
	if raw, _ := os.ReadFile(filepath.Join(backup, "control.db")); string(raw) != string(db) {
		t.Fatal("the refused start changed the store")
	}

	// The key moved out of --data, named by the environment: the session
	// from before still works and no new key appears in --data.
	moved := filepath.Join(t.TempDir(), "deckhand.key")
	if err := os.Rename(keyPath, moved); err != nil {
		t.Fatal(err)
	}
	p = serve(t, data, []string{"DECKHAND_MASTER_KEY_FILE=" + moved})
	if r := p.do("GET", "/api/v1/users/auth/me", nil, "Authorization", "Bearer "+access); r.status != 200 {
		t.Fatalf("session after restart: %d %s", r.status, r.raw)
	}
	p.stop()
	if _, err := os.Stat(keyPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a master.key appeared in --data although the key file was given")
	}
	// keys rotate needs the same key.
	if _, stderr, err := run(t, nil, "keys", "rotate", "--data", data, "--master-key-file", other); err == nil || !strings.Contains(stderr, "--master-key-file") {
		t.Fatalf("rotate with another key: %v %q", err, stderr)
	}
	if out, stderr, err := run(t, []string{"DECKHAND_MASTER_KEY_FILE=" + moved}, "keys", "rotate", "--data", data); err != nil || !strings.HasPrefix(out, "ed25519-") {
		t.Fatalf("rotate: %v %q %q", err, out, stderr)
	}
}
