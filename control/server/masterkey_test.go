package server_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/control/server"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// The master key lives in its own file (default
// <data>/master.key, 0600), never in control.db; a start with another key
// fails clearly and changes nothing.
func TestMasterKeyApartFromTheStore(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	path := filepath.Join(cfg.Data, "master.key")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("master.key: %v %v", st, err)
	}
	key, err := secrets.ReadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(cfg.Data, "control.db"))
	if bytes.Contains(raw, key) || bytes.Contains(raw, []byte(strings.TrimSpace(mustRead(t, path)))) {
		t.Fatal("control.db holds the master key")
	}
	// Key files hold no plaintext seed either.
	keys, _ := filepath.Glob(filepath.Join(server.KeysDir(cfg.Data), "*.json"))
	for _, k := range keys {
		if s := mustRead(t, k); !strings.Contains(s, "seed_sealed") || strings.Contains(s, "seed_b64") {
			t.Fatalf("%s: %s", k, s)
		}
	}
	// Restart with the same key works.
	srv, err = server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()

	// Another key file: refused, and neither file changes.
	other := filepath.Join(t.TempDir(), "other.key")
	if err := secrets.WriteKeyFile(other, secrets.NewKey()); err != nil {
		t.Fatal(err)
	}
	otherBefore, dbBefore := mustRead(t, other), mustRead(t, filepath.Join(cfg.Data, "control.db"))
	bad := cfg
	bad.MasterKeyFile = other
	if _, err := server.New(bad); !errors.Is(err, server.ErrWrongMasterKey) || !strings.Contains(err.Error(), "--master-key-file") {
		t.Fatalf("wrong key: %v", err)
	}
	if mustRead(t, other) != otherBefore || mustRead(t, filepath.Join(cfg.Data, "control.db")) != dbBefore {
		t.Fatal("a refused start changed a file")
	}

	// control.db copied alone into a new data dir: refused, and no key
	// file is left behind there.
	copyDir := t.TempDir()
	os.WriteFile(filepath.Join(copyDir, "control.db"), []byte(dbBefore), 0o600)
	cp := baseConfig(t)
	cp.Data = copyDir
	if _, err := server.New(cp); !errors.Is(err, server.ErrWrongMasterKey) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("copied store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(copyDir, "master.key")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused start left a master.key: %v", err)
	}
}

// A store of the version before (master key inside control.db, plaintext
// signing seed) starts; afterwards neither holds a key in the clear.
func TestLegacyDataDirMigrates(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	db, err := store.Open(filepath.Join(cfg.Data, "control.db"))
	if err != nil {
		t.Fatal(err)
	}
	legacy := secrets.NewKey()
	if err := db.Update(func(tx *store.Tx) error { return tx.PutRaw("identity_meta", "master_key", legacy) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	seed := bytes.Repeat([]byte{7}, 32)
	os.MkdirAll(server.KeysDir(cfg.Data), 0o700)
	os.WriteFile(filepath.Join(server.KeysDir(cfg.Data), "old.json"),
		[]byte(`{"kid":"old","algorithm":"ed25519","seed_b64":"BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=","created_at":"2026-01-01T00:00:00Z"}`), 0o600)
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Keys().Active().ID != "old" {
		t.Fatalf("active key %s", srv.Keys().Active().ID)
	}
	// No record holds the legacy key. (bbolt does not zero freed pages, so
	// its bytes may linger in free space until reused; the migration makes
	// them worthless instead: identity's tests check that the old key signs
	// no session and that TOTP secrets are re-sealed.)
	err = srv.Store().View(func(tx *store.Tx) error {
		return tx.ForEach("identity_meta", func(k string, v []byte) error {
			if k == "master_key" || bytes.Contains(v, legacy) {
				t.Errorf("identity_meta/%s holds the legacy master key", k)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if s := mustRead(t, filepath.Join(server.KeysDir(cfg.Data), "old.json")); strings.Contains(s, "seed_b64") || bytes.Contains([]byte(s), seed) {
		t.Fatalf("plaintext seed left: %s", s)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
