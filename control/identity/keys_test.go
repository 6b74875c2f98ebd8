package identity_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"deckhand/control/identity"
	"deckhand/control/mail"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// forgeWith re-signs the claims of a live access token with key.
func forgeWith(t *testing.T, live string, key []byte) string {
	t.Helper()
	var c jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(live, &c); err != nil {
		t.Fatal(err)
	}
	c["jti"] = "forged"
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// storeValues is every value identity keeps in its meta bucket.
func storeValues(t *testing.T, db *store.DB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := db.View(func(tx *store.Tx) error {
		return tx.ForEach("identity_meta", func(k string, raw []byte) error {
			out[k] = append([]byte(nil), raw...)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyStore copies control.db the way a backup would (the file alone).
// copyStore opens a second store holding what e's store holds: a copy of
// the bbolt file, or on PostgreSQL another handle on the same database
// (what a stolen database dump would be opened with).
func copyStore(t *testing.T, e *env) *store.DB {
	t.Helper()
	if e.another != nil {
		return e.another()
	}
	dst := filepath.Join(t.TempDir(), "control.db")
	err := e.db.View(func(*store.Tx) error {
		raw, err := os.ReadFile(e.db.Location())
		if err != nil {
			return err
		}
		return os.WriteFile(dst, raw, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// A copy of control.db alone holds nothing that signs a session
// JWT: neither any stored value nor a key derived from one the way the
// store's master key used to be, and the copy does not start under
// another master key.
func TestStoreCopyCannotForgeSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("backup@example.com")["token"].(string)
	for name, raw := range storeValues(t, e.db) {
		for label, key := range map[string][]byte{"value": raw, "derived": identity.Derive(raw, identity.LegacyJWTLabel)} {
			r := e.call("GET", "/api/v1/users/auth/me", nil, forgeWith(t, access, key))
			if r.status != 401 {
				t.Errorf("a JWT signed with the %s of identity_meta/%s is accepted: %d", label, name, r.status)
			}
		}
	}
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, access), 200)

	db := copyStore(t, e)
	defer db.Close()
	before := storeValues(t, db)
	m, _ := mail.New(mail.Config{Dir: t.TempDir()})
	other, _ := secrets.New(secrets.NewKey())
	_, err := identity.New(identity.Deps{DB: db, Mailer: m, Sealer: other, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if !errors.Is(err, identity.ErrWrongMasterKey) || !strings.Contains(err.Error(), "--master-key-file") {
		t.Fatalf("copy opened under another master key: %v", err)
	}
	after := storeValues(t, db)
	if len(after) != len(before) {
		t.Fatal("a failed start changed the store")
	}
	for k, v := range before {
		if !bytes.Equal(after[k], v) {
			t.Fatalf("a failed start changed identity_meta/%s", k)
		}
	}
}

// With the right master key the same store restarts and its sessions live.
func TestSealedKeysSurviveRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	access := e.account("restart@example.com")["token"].(string)
	db := copyStore(t, e)
	e2 := newEnv(t, func(d *identity.Deps) { d.DB, d.Sealer = db, e.sealer })
	e2.must(e2.call("GET", "/api/v1/users/auth/me", nil, access), 200)
}

func legacySeal(t *testing.T, key, plain []byte) string {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, gcm.NonceSize())
	rand.Read(nonce)
	return base64.RawStdEncoding.EncodeToString(gcm.Seal(nonce, nonce, plain, nil))
}

func legacyLookup(master []byte, secret string) string {
	m := hmac.New(sha256.New, identity.Derive(master, identity.LegacyMACLabel))
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil))
}

// Migration: a store written the old way (master key inside,
// TOTP sealed under a key derived from it, svc_ token hashed with another)
// starts, the account with its password, TOTP and svc_ token keeps
// working, and afterwards the store holds no master key and the old key
// signs nothing.
func TestLegacyStoreMigrates(t *testing.T) {
	t.Parallel()
	db, err := store.Open(filepath.Join(t.TempDir(), "control.db"))
	if err != nil {
		t.Fatal(err)
	}
	master := make([]byte, 32)
	rand.Read(master)
	const totpSecret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
	const svc = "svc_legacylegacylegacylegacylegacylegacy1234"
	hash, err := identity.HashPassword(goodPassword)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	err = db.Update(func(tx *store.Tx) error {
		user := map[string]any{"id": "u-legacy", "username": "legacy", "alias": "legacy", "email": "legacy@example.com",
			"role": "user", "is_banned": false, "email_verified": true, "password_hash": hash,
			"created_at": now, "updated_at": now, "totp_secret": legacySeal(t, identity.Derive(master, identity.LegacyEncLabel), []byte(totpSecret)),
			"two_factor_since": now}
		tok := map[string]any{"id": "t-legacy", "user_id": "u-legacy", "alias": "legacy bot", "hash": legacyLookup(master, svc),
			"ip_whitelist": []string{}, "expires_at": nil, "is_enabled": true, "created_at": now, "updated_at": now}
		for _, put := range []error{
			tx.PutRaw("identity_meta", "master_key", master),
			tx.Put("identity_users", "u-legacy", user),
			tx.PutRaw("identity_users_by_email", "legacy@example.com", []byte("u-legacy")),
			tx.PutRaw("identity_users_by_username", "legacy", []byte("u-legacy")),
			tx.Put("identity_auth_tokens", "t-legacy", tok),
			tx.PutRaw("identity_auth_tokens_by_hash", legacyLookup(master, svc), []byte("t-legacy")),
		} {
			if put != nil {
				return put
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	e := newEnv(t, func(d *identity.Deps) { d.DB = db })
	// The svc_ token still authenticates.
	if me := e.must(e.call("GET", "/api/v1/users/auth/me", nil, svc), 200); me.str("data", "email") != "legacy@example.com" {
		t.Fatalf("%s", me.raw)
	}
	// Password and TOTP still log in.
	temp := e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "legacy@example.com", "password": goodPassword}, ""), 200).str("data", "temp_token")
	access := e.must(e.call("POST", "/api/v1/users/auth/2fa/verify", map[string]any{"temp_token": temp, "code": e.oathtool(totpSecret)}, ""), 200).str("data", "token")
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, access), 200)
	// The old key is gone from the store and signs nothing.
	vals := storeValues(t, e.db)
	if _, ok := vals["master_key"]; ok {
		t.Fatal("the legacy master key is still in the store")
	}
	for k, v := range vals {
		if bytes.Contains(v, master) {
			t.Fatalf("identity_meta/%s holds the legacy master key", k)
		}
	}
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, forgeWith(t, access, identity.Derive(master, identity.LegacyJWTLabel))), 401)
	// The TOTP secret is sealed in the current format.
	err = e.db.View(func(tx *store.Tx) error {
		var u map[string]any
		if _, err := tx.Get("identity_users", "u-legacy", &u); err != nil {
			return err
		}
		if s, _ := u["totp_secret"].(string); !secrets.IsSealed(s) {
			t.Errorf("totp_secret not re-sealed: %q", s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
