package identity

import (
	"context"
	"net/http"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
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
		return platform.Invalid("aud", "is required: who the claim is for")
	}
	if len(in.Audience) > 256 {
		return platform.Invalid("aud", "must be at most 256 bytes")
	}
	for _, r := range in.Audience {
		if !unicode.IsPrint(r) {
			return platform.Invalid("aud", "must be printable characters")
		}
	}
	if _, err := signing.ClaimTTL(in.TTLSeconds); err != nil {
		return platform.Invalid("ttl_seconds", "%s", err.Error())
	}
	return nil
}

var errClaimsOff = &platform.Error{Code: platform.CodeSigningNotConfigured,
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
		return nil, platform.Internal("sign the identity claim", err)
	}
	return out, nil
}

func (s *Service) handleIdentityClaim(c fiber.Ctx) error {
	var in IdentityClaimInput
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	out, err := s.MintIdentityClaim(c.Context(), in)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Identity claim", out)
}

func (s *Service) claimRoutes() []platform.Route {
	return []platform.Route{{Method: http.MethodPost, Path: "/api/v1/users/auth/identity-claim", Policy: platform.SignedIn,
		Tags: []string{"auth"}, Summary: "Mint an identity claim for the signed-in user",
		Description: "A claim that the caller is user `sub` with role `role`, for audience `aud` (a service, URL or container that " +
			"checks it): payload `{typ: \"identity\", sub, role, aud, iat, exp}` as base64url JSON (`payload_b64`), signed with " +
			"the key set's active key (`kid`; `signature_hex` over the UTF-8 bytes of payload_b64: the key set's " +
			"`identity_claim_signed_data`). A verifier checks the signature against GET /api/v1/meta/public-key, then typ, aud " +
			"and that now is within [iat, exp]. `ttl_seconds` 30-3600, default 300. 503 SIGNING_NOT_CONFIGURED without signing keys.",
		Body: IdentityClaimInput{}, Response: signing.IssuedClaim{}, Handler: s.handleIdentityClaim}}
}
