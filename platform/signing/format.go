package signing

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Algorithm is the only signature algorithm deckhand uses.
const Algorithm = "ed25519"

// Header is the response header carrying the signature.
const Header = "X-Service-Signature"

// ReplayTolerance is how far a signature's t may be from the verifier's
// clock, in seconds, either way.
const ReplayTolerance = 300

// Usage lists what the keys sign.
var Usage = []string{"response-signing", "identity-claims", "container-claims"}

// Format describes the signed data for clients (the signing_format object).
var Format = SigningFormat{
	ResponseHeader:           Header + ": t=<unix_ts>,kid=<key_id>,path=<url_path>,sig=<128 hex chars>",
	ResponseSignedData:       "<t>.<response_body_utf8>",
	IdentityClaimSignedData:  "UTF-8 bytes of payload_b64, where payload_b64 = base64url(JSON identity payload)",
	ContainerClaimSignedData: "UTF-8 bytes of payload_b64, where payload_b64 = base64url(JSON container payload)",
	ReplayToleranceSeconds:   ReplayTolerance,
}

// PublicKeyPath is where the control plane serves its key set.
const PublicKeyPath = "/api/v1/meta/public-key"

// PublicKeySet is the signing key set served at GET /api/v1/meta/public-key.
type PublicKeySet struct {
	Keys          []PublicKey   `json:"keys"`
	ActiveKID     string        `json:"active_kid"`
	Usage         []string      `json:"usage"`
	SigningFormat SigningFormat `json:"signing_format"`
}

// PublicKey is one published key in three encodings, so clients in any
// language can load it without a conversion step.
type PublicKey struct {
	KID       string `json:"kid"`
	Algorithm string `json:"algorithm"`
	Hex       string `json:"public_key_hex"`
	B64       string `json:"public_key_b64"`
	B64URL    string `json:"public_key_b64url"`
}

// SigningFormat documents what is signed.
type SigningFormat struct {
	ResponseHeader           string `json:"response_header"`
	ResponseSignedData       string `json:"response_signed_data"`
	IdentityClaimSignedData  string `json:"identity_claim_signed_data"`
	ContainerClaimSignedData string `json:"container_claim_signed_data"`
	ReplayToleranceSeconds   int    `json:"replay_tolerance_seconds"`
}

// PublicKeyOf renders a public key for the document.
func PublicKeyOf(kid string, pub ed25519.PublicKey) PublicKey {
	return PublicKey{KID: kid, Algorithm: Algorithm, Hex: hex.EncodeToString(pub),
		B64: base64.StdEncoding.EncodeToString(pub), B64URL: base64.RawURLEncoding.EncodeToString(pub)}
}

// Decode returns the raw key, checking the three encodings agree.
func (p PublicKey) Decode() (ed25519.PublicKey, error) {
	if p.Algorithm != Algorithm {
		return nil, fmt.Errorf("key %q: algorithm %q is not %s", p.KID, p.Algorithm, Algorithm)
	}
	raw, err := hex.DecodeString(p.Hex)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("key %q: public_key_hex is not a 32-byte hex key", p.KID)
	}
	if p.B64 != "" && p.B64 != base64.StdEncoding.EncodeToString(raw) {
		return nil, fmt.Errorf("key %q: public_key_b64 disagrees with public_key_hex", p.KID)
	}
	if p.B64URL != "" && p.B64URL != base64.RawURLEncoding.EncodeToString(raw) {
		return nil, fmt.Errorf("key %q: public_key_b64url disagrees with public_key_hex", p.KID)
	}
	return ed25519.PublicKey(raw), nil
}

// Signature is a parsed X-Service-Signature value.
type Signature struct {
	T    int64
	KID  string
	Path string
	Sig  []byte
}

// Header parse errors; all wrap ErrMalformed.
var (
	ErrMissing   = errors.New("signature: no " + Header + " header")
	ErrMalformed = errors.New("signature: malformed " + Header + " header")
)

func malformed(why string) error { return fmt.Errorf("%w: %s", ErrMalformed, why) }

// FormatHeader renders the header value.
func FormatHeader(t int64, kid, path string, sig []byte) string {
	var b strings.Builder
	b.Grow(40 + len(kid) + len(path) + 2*len(sig))
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(t, 10))
	b.WriteString(",kid=")
	b.WriteString(kid)
	b.WriteString(",path=")
	b.WriteString(path)
	b.WriteString(",sig=")
	b.WriteString(hex.EncodeToString(sig))
	return b.String()
}

// ParseHeader parses a header value. t and kid are read from the front and
// sig from the end, so a path containing commas or "=" still parses.
func ParseHeader(v string) (Signature, error) {
	var s Signature
	if v == "" {
		return s, ErrMissing
	}
	rest, ok := strings.CutPrefix(v, "t=")
	if !ok {
		return s, malformed("must start with t=")
	}
	ts, rest, ok := strings.Cut(rest, ",kid=")
	if !ok {
		return s, malformed("kid missing after t")
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || t <= 0 || strings.HasPrefix(ts, "+") {
		return s, malformed("t is not a positive unix timestamp")
	}
	kid, rest, ok := strings.Cut(rest, ",path=")
	if !ok {
		return s, malformed("path missing after kid")
	}
	if kid == "" || strings.ContainsAny(kid, ", \t") {
		return s, malformed("kid is empty or contains separators")
	}
	i := strings.LastIndex(rest, ",sig=")
	if i < 0 {
		return s, malformed("sig missing after path")
	}
	path, sigHex := rest[:i], rest[i+len(",sig="):]
	if !strings.HasPrefix(path, "/") {
		return s, malformed("path must start with /")
	}
	if len(sigHex) != 2*ed25519.SignatureSize {
		return s, malformed("sig must be 128 hex characters")
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		return s, malformed("sig is not hex")
	}
	return Signature{T: t, KID: kid, Path: path, Sig: sig}, nil
}

// SignedData is what a response signature covers: "<t>.<body>".
func SignedData(t int64, body []byte) []byte {
	return appendSignedData(nil, t, body)
}

func appendSignedData(dst []byte, t int64, body []byte) []byte {
	dst = strconv.AppendInt(dst, t, 10)
	dst = append(dst, '.')
	return append(dst, body...)
}
