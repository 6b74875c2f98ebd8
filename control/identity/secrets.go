package identity

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"unicode"
	"unicode/utf8"

	"golang.org/x/oauth2"

	"deckhand/platform/fault"
)

// Password rules of docs/spec/interface.md's Limits table.
const (
	maxPasswordLen = 256
	signupRule     = "must be at least 12 characters and contain an uppercase letter, a lowercase letter, a digit and a special character"
	loginRule      = "must be at least 8 characters and contain an uppercase letter, a lowercase letter and a digit"
)

func passwordClasses(pw string) (upper, lower, digit, special bool) {
	for _, r := range pw {
		switch {
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsLower(r):
			lower = true
		case unicode.IsDigit(r):
			digit = true
		case unicode.IsPunct(r) || unicode.IsSymbol(r) || r == ' ':
			special = true
		}
	}
	return
}

// checkSignupPassword enforces the signup rule (also used for resets and
// admin-created accounts).
func checkSignupPassword(field, pw string) error {
	if pw == "" {
		return fault.Invalid(field, "is required")
	}
	if utf8.RuneCountInString(pw) > maxPasswordLen {
		return fault.Invalid(field, "must be at most %d characters", maxPasswordLen)
	}
	u, l, d, s := passwordClasses(pw)
	if utf8.RuneCountInString(pw) < 12 || !u || !l || !d || !s {
		return fault.Invalid(field, signupRule)
	}
	return nil
}

// checkPasswordGiven is all a login asks of a password: one was sent, and
// it is not longer than any account's could be (hashing is bounded).
func checkPasswordGiven(pw string) error {
	if pw == "" {
		return fault.Invalid("password", "is required")
	}
	if utf8.RuneCountInString(pw) > maxPasswordLen {
		return fault.Invalid("password", "must be at most %d characters", maxPasswordLen)
	}
	return nil
}

// checkLoginPassword is the weakest password an account may have: the rule
// for accounts an operator creates.
func checkLoginPassword(pw string) error {
	if err := checkPasswordGiven(pw); err != nil {
		return err
	}
	u, l, d, _ := passwordClasses(pw)
	if utf8.RuneCountInString(pw) < 8 || !u || !l || !d {
		return fault.Invalid("password", loginRule)
	}
	return nil
}

// randomToken is n random bytes, base64url without padding.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// lookupKey is the stored form of a secret: HMAC-SHA256 under the
// service's key, so a leaked store cannot be matched against guesses
// offline and equal secrets map to one key for O(1) lookup.
func (s *Service) lookupKey(secret string) string {
	m := hmac.New(sha256.New, s.macKey)
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil))
}

// checkPKCE compares the verifier's transform with the stored challenge in
// constant time.
func checkPKCE(challenge, verifier string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(oauth2.S256ChallengeFromVerifier(verifier)), []byte(challenge)) == 1
}

// validChallenge: 43-128 characters of base64url (RFC 7636 section 4.2).
func validChallenge(field, ch string) error {
	if ch == "" {
		return fault.Invalid(field, "is required")
	}
	if len(ch) < 43 || len(ch) > 128 {
		return fault.Invalid(field, "must be 43 to 128 characters (base64url SHA-256 of the code_verifier)")
	}
	for _, r := range ch {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '~') {
			return fault.Invalid(field, "must contain only base64url characters")
		}
	}
	return nil
}

// legacyOpen reads a value sealed the way stores did before the master key
// left them (AES-256-GCM under a key derived from the in-store master key,
// raw base64 of nonce || ciphertext); only the start-up migration uses it.
func legacyOpen(key []byte, sealed string) ([]byte, error) {
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if len(raw) < gcm.NonceSize() {
		return nil, errors.New("sealed value too short")
	}
	return gcm.Open(nil, raw[:gcm.NonceSize()], raw[gcm.NonceSize():], nil)
}
