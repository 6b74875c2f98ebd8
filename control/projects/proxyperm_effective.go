package projects

import (
	"context"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
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
	var out *proxyperm.Document
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		d, err := s.readDoc(tx, containerDocKey(id))
		if err != nil || d != nil {
			out = d
			return err
		}
		c, err := getContainer(tx, id)
		if err != nil {
			return err
		}
		if c == nil {
			return platform.NotFound("container", id)
		}
		if out, err = s.readDoc(tx, projectDocKey(c.ProjectID)); err != nil {
			return err
		}
		if out == nil {
			return errNoEffective
		}
		return nil
	})
	if err != nil {
		return nil, storeErr("read the effective proxy permissions document", err)
	}
	return out, nil
}

var errNoEffective = &platform.Error{Code: platform.CodeNotFound, Details: "proxy_permissions",
	Message: "neither the container nor its project has a proxy permissions document: only loopback clients pass its gateway"}

func (s *Service) effectiveRoute() platform.Route {
	return platform.Route{Method: http.MethodGet, Path: EffectivePath,
		Policy: agentOnly(s.env.Authz.Policy(CheckContainerAgent, "the container's own agent token (agt_) only: people and svc_ tokens get 403, "+
			"another container's agent token 403")),
		Tags: []string{"container proxy permissions"}, Summary: "The document the container's gateway enforces",
		Description: "The container's own document, or its project's (`container` \"*\") when it has none; 404 when neither exists " +
			"(the gateway then admits loopback clients only). The agent polls it with `If-None-Match` set to the last ETag it applied: " +
			"304 (signed, empty body) when unchanged. The ETag names the scope: `container:file:v<n>` or `project:file:v<n>`. " +
			"Every answer carries X-Service-Signature; the agent applies nothing whose signature fails. The document's secrets " +
			"(token values, HS256 secrets, password hashes) are in clear here and nowhere else.",
		Query: []platform.Param{{Name: "If-None-Match", In: "header",
			Description: "the ETag of the document the agent holds; 304 when it is still the effective one"}},
		Response: proxyperm.Document{}, Handler: s.handleEffective}
}

func (s *Service) handleEffective(c fiber.Ctx) error {
	d, err := s.GetEffective(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	tag := effectiveETag(d)
	c.Set(fiber.HeaderETag, `"`+tag+`"`)
	if inm := strings.Trim(strings.TrimSpace(c.Get(fiber.HeaderIfNoneMatch)), `"`); inm == tag {
		return c.SendStatus(http.StatusNotModified)
	}
	return platform.Respond(c, http.StatusOK, "Effective proxy permissions", d)
}

// agentOnly marks a policy as taking agent tokens.
func agentOnly(p platform.Policy) platform.Policy {
	p.Agents = true
	return p
}
