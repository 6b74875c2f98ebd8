// Package secrets owns deckhand's encryption of secrets at rest: the master
// key file (--master-key-file, never inside a store) and the Sealer that
// every domain seals its secrets with (session and lookup keys, TOTP
// secrets, signing-key seeds, later proxy credentials). A copy of a store
// or of the key directory without the master key opens nothing.
//
// Sealed form, version 1:
//
//	"v1." + base64url(nonce[12] || AES-256-GCM(ciphertext || tag))
//
// The AES key is HKDF-SHA256(master, info "deckhand secrets v1
// aes-256-gcm"), never the master key itself, and the caller's purpose
// string is the GCM additional data, so a value sealed for one purpose
// (say "identity/totp") does not open as another ("signing/seed"). A later
// format gets the prefix "v2." and Open keeps reading v1.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the master key's length in bytes.
const KeySize = 32

// ErrWrongKey means a sealed value does not open under this master key:
// the data was sealed under another key (or was altered).
var ErrWrongKey = errors.New("the master key does not open this sealed value (wrong --master-key-file, or the data was altered)")

const v1 = "v1."

// Sealer seals and opens secrets under one master key. It is safe for
// concurrent use.
type Sealer struct {
	aead cipher.AEAD
	id   string
}

// New makes a Sealer for a 32-byte master key.
func New(master []byte) (*Sealer, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("secrets: the master key must be %d bytes, got %d", KeySize, len(master))
	}
	aead, err := AEAD(master, "deckhand secrets v1 aes-256-gcm")
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, master)
	m.Write([]byte("deckhand master key id"))
	return &Sealer{aead: aead, id: hex.EncodeToString(m.Sum(nil)[:4])}, nil
}

// AEAD is AES-256-GCM under the key HKDF-SHA256 derives from secret for
// info, never secret itself.
func AEAD(secret []byte, info string) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, secret, nil, info, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// KeyID is a short fingerprint of the master key (not secret: a one-way
// MAC), for logs and error messages that must tell two keys apart.
func (s *Sealer) KeyID() string { return s.id }

// Seal encrypts plain for purpose (e.g. "identity/totp").
func (s *Sealer) Seal(purpose string, plain []byte) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	out := s.aead.Seal(nonce, nonce, plain, []byte(purpose))
	return v1 + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a value Seal made for the same purpose. A value sealed
// under another key, for another purpose, or altered gives ErrWrongKey; a
// value that is not in a known format gives another error.
func (s *Sealer) Open(purpose, sealed string) ([]byte, error) {
	if !IsSealed(sealed) {
		return nil, errors.New("secrets: not a sealed value (want the v1. format)")
	}
	raw, err := base64.RawURLEncoding.DecodeString(sealed[len(v1):])
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return nil, errors.New("secrets: malformed sealed value")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(purpose))
	if err != nil {
		return nil, ErrWrongKey
	}
	return plain, nil
}

// IsSealed reports whether v has the form Seal produces (so migrations can
// tell sealed values from legacy plaintext ones).
func IsSealed(v string) bool { return strings.HasPrefix(v, v1) }

// NewKey is a fresh random master key.
func NewKey() []byte {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		panic("secrets: crypto/rand failed: " + err.Error())
	}
	return k
}

// ReadKeyFile reads a master key file: 64 hex digits (what WriteKeyFile
// writes) or 32 bytes in standard or URL base64, surrounding whitespace
// ignored. A file that group or others may read is refused, as ssh does.
func ReadKeyFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("master key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("master key file %s is accessible by others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("master key file: %w", err)
	}
	text := strings.TrimSpace(string(raw))
	if k, err := hex.DecodeString(text); err == nil && len(k) == KeySize {
		return k, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(text); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("master key file %s: must hold a %d-byte key as 64 hex digits or base64", path, KeySize)
}

// WriteKeyFile writes key as hex to a new file at path, mode 0600, synced.
// It never replaces an existing file.
func WriteKeyFile(path string, key []byte) error {
	if len(key) != KeySize {
		return fmt.Errorf("master key: must be %d bytes", KeySize)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("master key file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("master key file: %w", err)
	}
	_, werr := f.WriteString(hex.EncodeToString(key) + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return fmt.Errorf("master key file %s: %w", path, werr)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// LoadOrCreate reads the key file at path, or, when no file exists there,
// makes a new key and writes it (0600). created tells the caller it may
// remove the file again if its first start fails, so a failed start leaves
// nothing behind.
func LoadOrCreate(path string) (key []byte, created bool, err error) {
	key, err = ReadKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key = NewKey()
	if err := WriteKeyFile(path, key); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process made it first
			key, err = ReadKeyFile(path)
			return key, false, err
		}
		return nil, false, err
	}
	return key, true, nil
}
