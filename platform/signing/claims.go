package signing

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Claim is a signed identity or container claim. The signature covers the
// UTF-8 bytes of PayloadB64 exactly as sent, so verifiers never re-encode
// JSON. KID is an addition to the two fields docs/spec/interface.md names: it lets a
// verifier pick the key directly; without it every known key is tried.
type Claim struct {
	PayloadB64   string `json:"payload_b64"`
	SignatureHex string `json:"signature_hex"`
	KID          string `json:"kid,omitempty"`
}

// ErrBadClaim means a claim is malformed or its signature does not verify.
var ErrBadClaim = errors.New("claim: invalid")

// SignClaim signs payload (marshalled to JSON) with the active key.
func (ks *KeySet) SignClaim(payload any) (Claim, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return Claim{}, fmt.Errorf("claim: encode payload: %w", err)
	}
	b64 := base64.RawURLEncoding.EncodeToString(raw)
	kid, sig := ks.Sign([]byte(b64))
	return Claim{PayloadB64: b64, SignatureHex: hex.EncodeToString(sig), KID: kid}, nil
}

// VerifyClaim checks c against any of pubs and decodes its payload into dst
// (dst may be nil to only verify).
func VerifyClaim(c Claim, dst any, pubs ...ed25519.PublicKey) error {
	sig, err := hex.DecodeString(c.SignatureHex)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: signature_hex must be 128 hex characters", ErrBadClaim)
	}
	ok := false
	for _, pub := range pubs {
		if len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, []byte(c.PayloadB64), sig) {
			ok = true
			break
		}
	}
	if !ok {
		return fmt.Errorf("%w: signature does not verify", ErrBadClaim)
	}
	raw, err := decodeB64URL(c.PayloadB64)
	if err != nil {
		return fmt.Errorf("%w: payload_b64 is not base64url", ErrBadClaim)
	}
	if dst == nil {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%w: payload is not the expected JSON: %v", ErrBadClaim, err)
	}
	return nil
}

// decodeB64URL accepts base64url with or without padding.
func decodeB64URL(s string) ([]byte, error) {
	if raw, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return raw, nil
	}
	return base64.URLEncoding.DecodeString(s)
}

// Claim lifetimes the mint routes take (ttl_seconds).
const (
	DefaultClaimTTL = 5 * time.Minute
	MinClaimTTL     = 30 * time.Second
	MaxClaimTTL     = time.Hour
)

// Claim types (the payload's typ): an identity claim never passes where a
// container claim is asked for, though one key signs both.
const (
	ClaimIdentity  = "identity"
	ClaimContainer = "container"
)

// ErrClaimTTL is a ttl_seconds out of [MinClaimTTL, MaxClaimTTL].
var ErrClaimTTL = fmt.Errorf("must be %d-%d seconds", int(MinClaimTTL.Seconds()), int(MaxClaimTTL.Seconds()))

// ClaimTTL is the lifetime a request asks for (0: the default).
func ClaimTTL(seconds int) (time.Duration, error) {
	if seconds == 0 {
		return DefaultClaimTTL, nil
	}
	d := time.Duration(seconds) * time.Second
	if d < MinClaimTTL || d > MaxClaimTTL {
		return 0, ErrClaimTTL
	}
	return d, nil
}

// IssuedClaim is what a mint route answers: the claim's three parts, the
// single-string form a header carries, its times and the payload as
// signed.
type IssuedClaim struct {
	Claim
	// Value is `<payload_b64>.<signature_hex>.<kid>`.
	Value     string          `json:"value"`
	IssuedAt  time.Time       `json:"issued_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	Payload   json.RawMessage `json:"payload"`
}

// Issue signs payload with the active key.
func (ks *KeySet) Issue(payload any, iat, exp time.Time) (*IssuedClaim, error) {
	c, err := ks.SignClaim(payload)
	if err != nil {
		return nil, err
	}
	raw, _ := decodeB64URL(c.PayloadB64)
	return &IssuedClaim{Claim: c, Value: c.PayloadB64 + "." + c.SignatureHex + "." + c.KID,
		IssuedAt: iat.UTC(), ExpiresAt: exp.UTC(), Payload: raw}, nil
}
