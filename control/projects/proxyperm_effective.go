package projects

import (
	"context"

	"deckhand/control/domain"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/proxyperm"
	"deckhand/platform/store"
)

// The effective document is what an agent enforces: its container's own
// document, or its project's when the container has none (docs/spec/operations.md,
// project-level proxy permissions). It is the one answer that carries the
// document's secrets in clear, so only the container's own agent token
// (agt_, agenttokens.go) reads it: a person, whatever their role, and any
// svc_ token get 403, another container's agent token 403.

// EffectivePath is the route an agent polls.
const EffectivePath = "/api/v1/containers/{id}/proxy/permissions/effective"

// effectiveETag names the scope too: a container's v3 and its project's
// v3 are different documents.
func effectiveETag(d *proxyperm.Document) string {
	if d.Container == "*" {
		return "project:" + d.ETag
	}
	return "container:" + d.ETag
}

// GetEffective is the document governing container id: its own, else its
// project's; 404 when neither exists (then only loopback passes).
func (s *Service) GetEffective(ctx context.Context, id string) (*proxyperm.Document, error) {
	return domain.Transact(ctx, s.db.ViewContext, "read the effective proxy permissions document", func(tx *store.Tx) (*proxyperm.Document, error) {
		d, err := s.readDoc(tx, containerDocKey(id))
		if err != nil || d != nil {
			return d, err
		}
		c, err := findContainer(tx, id)
		if err != nil {
			return nil, err
		}
		if d, err = s.readDoc(tx, projectDocKey(c.ProjectID)); err == nil && d == nil {
			err = errNoEffective
		}
		return d, err
	})
}

var errNoEffective = &fault.Error{Code: fault.CodeNotFound, Details: "proxy_permissions",
	Message: "neither the container nor its project has a proxy permissions document: only loopback clients pass its gateway"}

// EffectiveAnswer is the effective document with its ETag; 304 without
// a body when the agent holds it.
type EffectiveAnswer struct {
	ETag   string `header:"ETag" doc:"container:file:v<n> or project:file:v<n>, quoted"`
	Status int
	Body   *proxyperm.Document
}

// PollEffective is GetEffective for the agent's poll.
func (s *Service) PollEffective(ctx context.Context, in Poll) (*EffectiveAnswer, error) {
	d, err := s.GetEffective(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	out := &EffectiveAnswer{}
	out.ETag, out.Status, out.Body = polled(in, effectiveETag(d), d)
	return out, nil
}

// agentOnly marks a policy as taking agent tokens.
func agentOnly(p platform.Policy) platform.Policy {
	p.Agents = true
	return p
}
