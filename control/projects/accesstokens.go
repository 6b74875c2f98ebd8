package projects

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"deckhand/control/agentservices"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/proxyperm"
)

// An access token opens a container's agent to the person who asked for
// it, for a while: the control plane signs `{typ:"access", container, sub,
// services?, iat, exp}` with the keys its answers are signed with, and
// the container's gateway admits it as `Authorization: Bearer` (or the
// deckhand_token cookie) beside the groups of its proxy permissions
// document (platform/proxyperm). Nothing is stored: it lapses at exp,
// and only a key rotation ends it sooner.

// An access token's default lifetime (seconds) and most services.
const (
	defaultAccessTTL  = 3600
	maxAccessServices = 16
)

// AccessTokenInput is the body of POST /api/v1/containers/{id}/access-tokens.
type AccessTokenInput struct {
	Services   []string `json:"services,omitempty" doc:"the agent's services the token opens (e.g. mcp, or process and files); absent or empty: every service"`
	TTLSeconds int      `json:"ttl_seconds,omitempty" doc:"how long the token lasts: 60-86400 seconds, default 3600"`
}

// Validate checks the services and lifetime, and sorts the services.
func (in *AccessTokenInput) Validate() error {
	if len(in.Services) > maxAccessServices {
		return fault.Invalid("services", "at most %d services", maxAccessServices)
	}
	for i, svc := range in.Services {
		if !slices.Contains(agentservices.Names, svc) {
			return fault.Invalid(fmt.Sprintf("services[%d]", i), "%q is not a service of the agent (one of %s)", svc, strings.Join(slices.Sorted(slices.Values(agentservices.Names)), ", "))
		}
	}
	sort.Strings(in.Services)
	in.Services = slices.Compact(in.Services)
	if in.TTLSeconds == 0 {
		in.TTLSeconds = defaultAccessTTL
	}
	ttl := time.Duration(in.TTLSeconds) * time.Second
	if ttl < proxyperm.MinAccessLifetime || ttl > proxyperm.MaxAccessLifetime {
		return fault.Invalid("ttl_seconds", "must be 60-86400 (one minute to one day)")
	}
	return nil
}

// AccessTokenRequest is POST /api/v1/containers/{id}/access-tokens.
type AccessTokenRequest struct {
	ContainerRef
	Body AccessTokenInput
}

// AccessToken is a signed access token for one container's agent.
type AccessToken struct {
	ContainerID string `json:"container_id"`
	// Token goes as `Authorization: Bearer <token>` (or the
	// deckhand_token cookie) to the container's gateway, directly or
	// through the platform proxy.
	Token string `json:"token"`
	// Services are those it opens; absent: every one.
	Services  []string  `json:"services,omitempty"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// AgentURL is the agent's gateway as the control plane reaches it,
	// while the container runs; URLs are its services through the
	// platform proxy.
	AgentURL string            `json:"agent_url,omitempty"`
	URLs     map[string]string `json:"urls,omitempty"`
}

// CreateAccessToken signs an access token to container id's agent for
// the caller.
func (s *Service) CreateAccessToken(ctx context.Context, req AccessTokenRequest) (*AccessToken, error) {
	in := req.Body
	if err := in.Validate(); err != nil {
		return nil, err
	}
	keys := s.env.Config.Keys
	if keys == nil {
		return nil, errSigningOff
	}
	p, ok := auth.FromContext(ctx)
	if !ok || p.UserID == "" {
		return nil, fault.Errorf(fault.CodeUnauthorized, "an access token is minted for a signed-in user")
	}
	c, err := s.current(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	c = s.decorate(c)
	iat := s.now()
	exp := iat.Add(time.Duration(in.TTLSeconds) * time.Second)
	tok, err := keys.Issue(proxyperm.AccessClaim{Type: proxyperm.ClaimTypeAccess, Container: c.ID, Subject: p.UserID,
		Services: in.Services, IssuedAt: iat.Unix(), Expires: exp.Unix()}, iat, exp)
	if err != nil {
		return nil, fault.Internal("sign the access token", err)
	}
	out := &AccessToken{ContainerID: c.ID, Token: tok.Value, Services: in.Services, IssuedAt: iat.UTC(), ExpiresAt: exp.UTC(), URLs: c.URLs}
	if c.AgentAddr != "" {
		out.AgentURL = "http://" + c.AgentAddr
	}
	return out, nil
}
