package secrets_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform/secrets"
)

func sealer(t *testing.T) *secrets.Sealer {
	t.Helper()
	s, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	a, b := sealer(t), sealer(t)
	plain := []byte("JBSWY3DPEHPK3PXP")
	v, err := a.Seal("identity/totp", plain)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "v1.") || strings.Contains(v, string(plain)) || !secrets.IsSealed(v) {
		t.Fatalf("sealed form %q", v)
	}
	if again, _ := a.Seal("identity/totp", plain); again == v {
		t.Fatal("two seals of one value are equal (nonce reuse)")
	}
	got, err := a.Open("identity/totp", v)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q %v", got, err)
	}
	cases := []struct {
		name    string
		s       *secrets.Sealer
		purpose string
		value   string
		wrong   bool
	}{
		{"other key", b, "identity/totp", v, true},
		{"other purpose", a, "signing/seed", v, true},
		{"altered", a, "identity/totp", v[:len(v)-2] + flip(v[len(v)-2:]), true},
		{"plaintext", a, "identity/totp", "JBSWY3DPEHPK3PXP", false},
		{"truncated", a, "identity/totp", "v1.AAAA", false},
	}
	for _, tc := range cases {
		_, err := tc.s.Open(tc.purpose, tc.value)
		if err == nil || errors.Is(err, secrets.ErrWrongKey) != tc.wrong {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if a.KeyID() == b.KeyID() || len(a.KeyID()) != 8 {
		t.Fatalf("key ids %q %q", a.KeyID(), b.KeyID())
	}
}

func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

func TestKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "master.key")
	k, created, err := secrets.LoadOrCreate(path)
	if err != nil || !created || len(k) != secrets.KeySize {
		t.Fatalf("create: %v %v", created, err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	k2, created, err := secrets.LoadOrCreate(path)
	if err != nil || created || !bytes.Equal(k, k2) {
		t.Fatalf("reload: %v %v", created, err)
	}
	if err := secrets.WriteKeyFile(path, secrets.NewKey()); err == nil {
		t.Fatal("WriteKeyFile replaced an existing key")
	}
	if k3, _ := secrets.ReadKeyFile(path); !bytes.Equal(k, k3) {
		t.Fatal("key changed")
	}
	// base64 is accepted too; other contents and loose modes are refused.
	b64 := filepath.Join(dir, "b64.key")
	os.WriteFile(b64, []byte(base64.StdEncoding.EncodeToString(k)+"\n"), 0o600)
	if got, err := secrets.ReadKeyFile(b64); err != nil || !bytes.Equal(got, k) {
		t.Fatalf("base64 key: %v", err)
	}
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, []byte("abcd\n"), 0o600)
	if _, err := secrets.ReadKeyFile(short); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Fatalf("short key: %v", err)
	}
	os.Chmod(b64, 0o644)
	if _, err := secrets.ReadKeyFile(b64); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("loose mode: %v", err)
	}
}
