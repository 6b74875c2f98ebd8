package deckhand_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
)

// FromLogin reads the file `deckhand login` writes: the control plane and
// the credential, refused when others may read it.
func TestFromLoginUsesTheCLIsSavedLogin(t *testing.T) {
	ctx := context.Background()
	c := signedIn(t, "fromlogin@example.com", "")
	tok, err := c.CreateToken(ctx, "from login")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "deckhand", "config.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{"control_url": "` + control.URL + `", "credential": {"kind": "token", "token": "` + *tok.Token + `"}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(deckhand.ConfigEnv, path)
	fc, err := deckhand.FromLogin(deckhand.Options{})
	if err != nil {
		t.Fatal(err)
	}
	me, err := fc.Me(ctx)
	if err != nil || *me.Email != "fromlogin@example.com" || fc.BaseURL() != control.URL {
		t.Fatalf("from the login file: %v %+v", err, me)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := deckhand.FromLogin(deckhand.Options{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a login file others may read: %v", err)
	}
	t.Setenv(deckhand.ConfigEnv, filepath.Join(t.TempDir(), "none.json"))
	if _, err := deckhand.FromLogin(deckhand.Options{}); err == nil || !strings.Contains(err.Error(), "deckhand login") {
		t.Fatalf("no login file: %v", err)
	}
}
