package projects

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/proxyperm"
	"deckhand/platform/signing"
	"deckhand/platform/store"
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
		return platform.Invalid("aud", "is required: the id of the container whose gateway the claim is for")
	}
	if err := validID("aud", in.Audience); err != nil {
		return err
	}
	if _, err := signing.ClaimTTL(in.TTLSeconds); err != nil {
		return platform.Invalid("ttl_seconds", "%s", err.Error())
	}
	return nil
}

var errSigningOff = &platform.Error{Code: platform.CodeSigningNotConfigured,
	Message: "claims need the control plane's signing keys: it runs with --signing=false"}

// MintContainerClaim signs a claim for container id, addressed to
// in.Audience.
func (s *Service) MintContainerClaim(ctx context.Context, id string, in ContainerClaimInput) (*signing.IssuedClaim, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	keys := s.env.Config.Keys
	if keys == nil {
		return nil, errSigningOff
	}
	var project string
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		c, err := getContainer(tx, id)
		if err != nil {
			return err
		}
		if c == nil {
			return platform.NotFound("container", id)
		}
		project = c.ProjectID
		return nil
	})
	if err != nil {
		return nil, storeErr("read the container", err)
	}
	ttl, _ := signing.ClaimTTL(in.TTLSeconds)
	iat := s.now()
	exp := iat.Add(ttl)
	out, err := keys.Issue(proxyperm.ContainerClaim{Type: proxyperm.ClaimTypeContainer, Container: id, Project: project,
		Audience: in.Audience, IssuedAt: iat.Unix(), Expires: exp.Unix()}, iat, exp)
	if err != nil {
		return nil, platform.Internal("sign the container claim", err)
	}
	return out, nil
}

func (s *Service) handleContainerClaim(c fiber.Ctx) error {
	var in ContainerClaimInput
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	out, err := s.MintContainerClaim(c.Context(), c.Params("id"), in)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Container claim", out)
}

func (s *Service) claimRoutes() []platform.Route {
	pol := agentOnly(s.env.Authz.Policy(CheckContainerClaim, "the container's own agent token (agt_), an admin, or the owner or a manager "+
		"of the container's project"))
	return []platform.Route{{Method: http.MethodPost, Path: "/api/v1/containers/{id}/claims", Policy: pol,
		Tags: []string{"container claims"}, Summary: "Mint a container claim",
		Description: "A claim that container `{id}` (of its project) calls container `aud`: payload `{typ: \"container\", container, " +
			"project, aud, iat, exp}` as base64url JSON (`payload_b64`), signed with the key set's active key (`kid`, `signature_hex` " +
			"over the UTF-8 bytes of payload_b64: the key set's `container_claim_signed_data`). `value` is the header form " +
			"`<payload_b64>.<signature_hex>.<kid>` for X-Deckhand-Container-Claim, which a service-identity group of the audience's " +
			"proxy permissions admits while now is within [iat, exp] (30 s skew) and aud is that container. `ttl_seconds` 30-3600, " +
			"default 300. 503 SIGNING_NOT_CONFIGURED without signing keys. 400 for a malformed id or body; 404 for an unknown " +
			"container; 403 for another container's agent token, an operator or viewer, or anyone outside the project.",
		Body: ContainerClaimInput{}, Response: signing.IssuedClaim{}, Handler: s.handleContainerClaim}}
}

// CheckContainerClaim admits the container's own agent token, or whoever
// may manage the container (an admin, its project's owner or a manager).
const CheckContainerClaim = "container.claim"

func (s *Service) checkClaim(ctx context.Context, param func(string) string) error {
	if p, ok := auth.FromContext(ctx); ok && p.Kind == auth.KindAgent {
		return s.checkAgent(ctx, param)
	}
	return s.checkManage(ctx, param)
}
