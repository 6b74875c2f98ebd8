package projects

import (
	"context"

	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/proxyperm"
	"deckhand/platform/signing"
)

// A container claim says "container X of project P calls you, container
// aud" for a few minutes, signed by the control plane's active key. The
// container's agent presents it at another container's gateway in
// X-Deckhand-Container-Claim, where a service-identity group naming X or
// P admits it (platform/proxyperm checks typ, aud, iat and exp).

// ContainerClaimInput is the body of POST /api/v1/containers/{id}/claims.
type ContainerClaimInput struct {
	// Audience is the id of the container whose gateway will be called.
	Audience string `json:"aud" required:"true" doc:"the id of the container whose gateway the claim is for"`
	// TTLSeconds is the claim's lifetime (default 300, 30-3600).
	TTLSeconds int `json:"ttl_seconds,omitempty" doc:"lifetime in seconds: 30-3600, default 300"`
}

// Validate checks the audience and lifetime.
func (in *ContainerClaimInput) Validate() error {
	if in.Audience == "" {
		return fault.Invalid("aud", "is required: the id of the container whose gateway the claim is for")
	}
	if err := validID("aud", in.Audience); err != nil {
		return err
	}
	if _, err := signing.ClaimTTL(in.TTLSeconds); err != nil {
		return fault.Invalid("ttl_seconds", "%s", err.Error())
	}
	return nil
}

// ContainerClaimRequest is POST /api/v1/containers/{id}/claims.
type ContainerClaimRequest struct {
	ContainerRef
	Body ContainerClaimInput
}

var errSigningOff = &fault.Error{Code: fault.CodeSigningNotConfigured,
	Message: "claims need the control plane's signing keys: it runs with --signing=false"}

// MintContainerClaim signs a claim for container id, addressed to
// in.Audience.
func (s *Service) MintContainerClaim(ctx context.Context, req ContainerClaimRequest) (*signing.IssuedClaim, error) {
	id, in := req.ID, req.Body
	if err := in.Validate(); err != nil {
		return nil, err
	}
	keys := s.env.Config.Keys
	if keys == nil {
		return nil, errSigningOff
	}
	c, err := s.current(ctx, id)
	if err != nil {
		return nil, err
	}
	ttl, _ := signing.ClaimTTL(in.TTLSeconds)
	iat := s.now()
	exp := iat.Add(ttl)
	out, err := keys.Issue(proxyperm.ContainerClaim{Type: proxyperm.ClaimTypeContainer, Container: id, Project: c.ProjectID,
		Audience: in.Audience, IssuedAt: iat.Unix(), Expires: exp.Unix()}, iat, exp)
	if err != nil {
		return nil, fault.Internal("sign the container claim", err)
	}
	return out, nil
}

// CheckContainerClaim admits the container's own agent token, or whoever
// may manage the container (an admin, its project's owner or a manager).
const CheckContainerClaim = "container.claim"

func (s *Service) checkClaim(ctx context.Context, param func(string) string) error {
	if p, ok := auth.FromContext(ctx); ok && p.Kind == auth.KindAgent {
		return s.checkAgent(ctx, param)
	}
	return s.checkAdminOr(roleManager)(ctx, param)
}
