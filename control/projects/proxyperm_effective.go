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
// document, or its project's when the container has none (operations.md,
// project-level proxy permissions). The agent reads it with its svc_
// token. A token acts for the user who created it, so the binding of a
// token to a container is that user's role: the route demands
// container.access (the project's owner, an operator or a manager), the
// same right that writes the container's document. A token of a viewer,
// or of anyone outside the project, gets 403; its project's other
// containers are reachable only by tokens whose owner may act on them.

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
		Policy: s.env.Authz.Policy(CheckContainerAccess, "the owner, an operator or a manager of the container's project; "+
			"meant for the container agent's svc_ token, which acts for the user who created it"),
		Tags: []string{"container proxy permissions"}, Summary: "The document the container's gateway enforces",
		Description: "The container's own document, or its project's (`container` \"*\") when it has none; 404 when neither exists " +
			"(the gateway then admits loopback clients only). The agent polls it with `If-None-Match` set to the last ETag it applied: " +
			"304 (signed, empty body) when unchanged. The ETag names the scope: `container:file:v<n>` or `project:file:v<n>`. " +
			"Every answer carries X-Service-Signature; the agent applies nothing whose signature fails.",
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
