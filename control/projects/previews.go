package projects

import (
	"context"
	"net/url"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/hostroute"
	"deckhand/platform/proxyperm"
)

// A preview link opens one port of one container to whoever holds it,
// for a while, with no group of its proxy permissions document: the
// control plane signs `{typ:"preview", container, port, iat, exp}` with
// the keys its answers are signed with, and the container's agent admits
// the port preview host of exactly that port (platform/proxyperm).

// PreviewInput is the body of POST /api/v1/containers/{id}/previews.
type PreviewInput struct {
	Port       int `json:"port" required:"true" doc:"the TCP port inside the container, 1-65535"`
	TTLSeconds int `json:"ttl_seconds,omitempty" doc:"how long the link opens the port: 60-604800 seconds, default 3600"`
}

// Validate checks the port and lifetime.
func (in *PreviewInput) Validate() error {
	if in.Port < 1 || in.Port > 65535 {
		return fault.Invalid("port", "must be a TCP port 1-65535")
	}
	if in.TTLSeconds == 0 {
		in.TTLSeconds = 3600
	}
	ttl := time.Duration(in.TTLSeconds) * time.Second
	if ttl < proxyperm.MinPreviewLifetime || ttl > proxyperm.MaxPreviewLifetime {
		return fault.Invalid("ttl_seconds", "must be 60-604800 (one minute to seven days)")
	}
	return nil
}

// PreviewRequest is POST /api/v1/containers/{id}/previews.
type PreviewRequest struct {
	ContainerRef
	Body PreviewInput
}

// Preview is a signed preview link.
type Preview struct {
	ContainerID string `json:"container_id"`
	Port        int    `json:"port"`
	// URL opens the preview in a browser: the port's preview host with the
	// token once in the query (the agent moves it into a cookie).
	URL string `json:"url"`
	// Token is the bare token, for clients that send it as the
	// deckhand_preview cookie or query parameter themselves.
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CreatePreview signs a preview link for a port of container id.
func (s *Service) CreatePreview(ctx context.Context, req PreviewRequest) (*Preview, error) {
	in := req.Body
	if err := in.Validate(); err != nil {
		return nil, err
	}
	keys := s.env.Config.Keys
	if keys == nil {
		return nil, errSigningOff
	}
	c, err := s.current(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	iat := s.now()
	exp := iat.Add(time.Duration(in.TTLSeconds) * time.Second)
	tok, err := keys.Issue(proxyperm.PreviewClaim{Type: proxyperm.ClaimTypePreview, Container: c.ID, Port: in.Port,
		IssuedAt: iat.Unix(), Expires: exp.Unix()}, iat, exp)
	if err != nil {
		return nil, fault.Internal("sign the preview token", err)
	}
	link := s.ServiceURL(c, hostroute.PortService(in.Port)) + "/?" + url.Values{proxyperm.PreviewParam: {tok.Value}}.Encode()
	return &Preview{ContainerID: c.ID, Port: in.Port, URL: link, Token: tok.Value, ExpiresAt: exp.UTC()}, nil
}
