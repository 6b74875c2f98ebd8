package identity

import (
	"context"
	"time"
	"unicode"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/signing"
)

// IdentityClaim is the payload of an identity claim: the signed-in user
// (sub, role) for one audience, from iat until exp (unix seconds).
type IdentityClaim struct {
	Type     string `json:"typ"` // "identity"
	Subject  string `json:"sub"`
	Role     string `json:"role"`
	Audience string `json:"aud"`
	IssuedAt int64  `json:"iat"`
	Expires  int64  `json:"exp"`
}

// IdentityClaimInput is the body of POST /api/v1/users/auth/identity-claim.
type IdentityClaimInput struct {
	// Audience names who the claim is for (a service, a URL, a container).
	Audience   string `json:"aud" required:"true" doc:"who the claim is for: 1-256 printable characters"`
	TTLSeconds int    `json:"ttl_seconds,omitempty" doc:"lifetime in seconds: 30-3600, default 300"`
}

// Validate checks the audience and lifetime.
func (in *IdentityClaimInput) Validate() error {
	if in.Audience == "" {
		return fault.Invalid("aud", "is required: who the claim is for")
	}
	if len(in.Audience) > 256 {
		return fault.Invalid("aud", "must be at most 256 bytes")
	}
	for _, r := range in.Audience {
		if !unicode.IsPrint(r) {
			return fault.Invalid("aud", "must be printable characters")
		}
	}
	if _, err := signing.ClaimTTL(in.TTLSeconds); err != nil {
		return fault.Invalid("ttl_seconds", "%s", err.Error())
	}
	return nil
}

var errClaimsOff = &fault.Error{Code: fault.CodeSigningNotConfigured,
	Message: "claims need the control plane's signing keys: it runs with --signing=false"}

// MintIdentityClaim signs a claim that the caller is who they are, for
// in.Audience.
func (s *Service) MintIdentityClaim(ctx context.Context, in IdentityClaimInput) (*signing.IssuedClaim, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if s.keys == nil {
		return nil, errClaimsOff
	}
	ttl, _ := signing.ClaimTTL(in.TTLSeconds)
	iat := s.clock.Now().UTC().Truncate(time.Second)
	exp := iat.Add(ttl)
	out, err := s.keys.Issue(IdentityClaim{Type: signing.ClaimIdentity, Subject: p.UserID, Role: p.Role, Audience: in.Audience,
		IssuedAt: iat.Unix(), Expires: exp.Unix()}, iat, exp)
	if err != nil {
		return nil, fault.Internal("sign the identity claim", err)
	}
	return out, nil
}
