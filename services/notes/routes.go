package notes

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

const node = "/api/v1/notes/notebooks/{notebookId}/nodes/{nodeId}"

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"notes"}
	ifMatch := platform.Param{Name: "If-Match", In: "header", Description: "the version being changed, \"N\" (the ETag); a mismatch is 409 VERSION_CONFLICT"}
	return []platform.Route{
		{Method: http.MethodGet, Path: node + "/document", Tags: tags, Summary: "Read a node's document",
			Description: "With its version (also the ETag). 404 for an unknown node.", Response: Document{}, Handler: s.handleGet},
		{Method: http.MethodPut, Path: node + "/document", Tags: tags, Summary: "Create or replace a node's document",
			Description: "201 when created, 200 when replaced. Replacing needs the current version, as If-Match \"N\" or version " +
				"in the body (428 PRECONDITION_REQUIRED without; 409 VERSION_CONFLICT when it is not current). version 0 (or " +
				"If-Match \"0\") creates only. Every block is checked (ids unique, heading level 1-6, diagram statements parse); " +
				"a broken rule is 400 naming the field (blocks[3].level) and nothing is written.",
			Query: []platform.Param{ifMatch}, Body: PutDocument{}, Response: Document{}, Handler: s.handlePut},
		{Method: http.MethodPatch, Path: node + "/document", Tags: tags, Summary: "Edit a node's document",
			Description: "Sets the title and applies ops in order: insert (block, at index, default the end), update (id, block: " +
				"the new content, the id stays), delete (id), move (id to index). All or none: an op naming a block that is not " +
				"there is 400 naming ops[i].id. With If-Match or version the edit applies only to that version (409 " +
				"VERSION_CONFLICT otherwise); without, it applies to the current one. 404 for an unknown node.",
			Query: []platform.Param{ifMatch}, Body: PatchDocument{}, Response: Document{}, Handler: s.handlePatch},
		{Method: http.MethodGet, Path: node + "/blocks/{blockId}/svg", Tags: tags, Summary: "A block rendered as SVG",
			Description: "image/svg+xml, well-formed XML. Text, heading, list, quote and code blocks are wrapped to width; math is " +
				"a minimal TeX rendering and diagrams are boxes and arrows (see the service description). The drawing keeps " +
				"its proportions: a diagram or formula wider than width is scaled down to it. 404 for an unknown node or block. " +
				"The answer carries Content-Security-Policy: " + platform.SandboxCSP + " and X-Content-Type-Options: nosniff, " +
				"so the image opened as a page runs nothing on the agent's origin.",
			Query: []platform.Param{{Name: "width", Type: "integer", Range: &platform.Range{Min: 120, Max: 4000}, Default: "800",
				Description: "width of the image in pixels"}},
			ContentType: "image/svg+xml", Handler: s.handleSVG},
		{Method: http.MethodPost, Path: node + "/export-ticket", Tags: tags, Summary: "A one-time URL that downloads the node as Markdown",
			Description: "201 with a ticket good for one download within ttl_seconds (default 300). Only its hash is stored. The " +
				"node must exist (404). The download renders the document as it is then.",
			Body: ExportRequest{}, Response: ExportTicket{}, Status: http.StatusCreated, Handler: s.handleTicket},
		{Method: http.MethodGet, Path: "/api/v1/notes/export", Tags: tags, Summary: "Download a node as Markdown with a ticket",
			Description: "text/markdown as an attachment named <nodeId>.md. The first request uses the ticket up: a second, or one " +
				"after it expired, is 410 GONE; an unknown ticket is 404. The ticket travels in the query, not the path, so " +
				"access logs (which record paths) never hold a live ticket.",
			Query:       []platform.Param{{Name: "ticket", Required: true, Description: "the ticket of POST .../export-ticket"}},
			ContentType: "text/markdown", Handler: s.handleExport},
	}
}

func ids(c fiber.Ctx) (string, string, error) {
	nb, nd := c.Params("notebookId"), c.Params("nodeId")
	if err := checkID("notebookId", nb); err != nil {
		return "", "", err
	}
	return nb, nd, checkID("nodeId", nd)
}

// expected reads the version a write names: If-Match ("N", W/"N" or N) and
// the body's version must agree when both are given.
func expected(c fiber.Ctx, body *int64) (*int64, error) {
	h := strings.TrimSpace(c.Get("If-Match"))
	if h == "" {
		return body, nil
	}
	v, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(h, "W/"), `"`), 10, 64)
	if err != nil || v < 0 {
		return nil, platform.Invalid("If-Match", "must be a document version \"N\" (the ETag), got %q", h)
	}
	if body != nil && *body != v {
		return nil, platform.Invalid("version", "is %d but If-Match says %d", *body, v)
	}
	return &v, nil
}

func withETag(c fiber.Ctx, status int, d Document) error {
	c.Set("ETag", `"`+strconv.FormatInt(d.Version, 10)+`"`)
	return platform.JSON(c, status, d)
}

func (s *Service) handleGet(c fiber.Ctx) error {
	nb, nd, err := ids(c)
	if err != nil {
		return err
	}
	d, err := s.Get(c.Context(), nb, nd)
	if err != nil {
		return err
	}
	return withETag(c, http.StatusOK, d)
}

func (s *Service) handlePut(c fiber.Ctx) error {
	nb, nd, err := ids(c)
	if err != nil {
		return err
	}
	var in PutDocument
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	if in.Version != nil && *in.Version < 0 {
		return platform.Invalid("version", "must be 0 or more")
	}
	exp, err := expected(c, in.Version)
	if err != nil {
		return err
	}
	d, isNew, err := s.Put(c.Context(), nb, nd, in, exp)
	if err != nil {
		return err
	}
	if isNew {
		return withETag(c, http.StatusCreated, d)
	}
	return withETag(c, http.StatusOK, d)
}

func (s *Service) handlePatch(c fiber.Ctx) error {
	nb, nd, err := ids(c)
	if err != nil {
		return err
	}
	var in PatchDocument
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	exp, err := expected(c, in.Version)
	if err != nil {
		return err
	}
	d, err := s.Patch(c.Context(), nb, nd, in, exp)
	if err != nil {
		return err
	}
	return withETag(c, http.StatusOK, d)
}

func (s *Service) handleSVG(c fiber.Ctx) error {
	nb, nd, err := ids(c)
	if err != nil {
		return err
	}
	b, err := s.BlockOf(c.Context(), nb, nd, c.Params("blockId"))
	if err != nil {
		return err
	}
	svg, err := renderSVG(b, int(platform.QueryOf(c).Int("width")))
	if err != nil {
		return platform.Invalid("blockId", "the block does not render: %s", err.Error())
	}
	c.Set(fiber.HeaderContentType, "image/svg+xml; charset=utf-8")
	platform.Sandbox(c) // text of a block is the user's, and SVG can script
	return c.Status(http.StatusOK).Send(svg)
}

func (s *Service) handleTicket(c fiber.Ctx) error {
	nb, nd, err := ids(c)
	if err != nil {
		return err
	}
	var in ExportRequest
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	t, err := s.IssueTicket(c.Context(), nb, nd, in)
	if err != nil {
		return err
	}
	t.URL = strings.TrimRight(c.Get("X-Forwarded-Prefix"), "/") + t.Path
	return platform.JSON(c, http.StatusCreated, t)
}

func (s *Service) handleExport(c fiber.Ctx) error {
	md, name, err := s.Redeem(c.Context(), platform.QueryOf(c).String("ticket"))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/markdown; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(http.StatusOK).Send(md)
}

func unmarshalJSON(raw []byte, v any) error { return json.Unmarshal(raw, v) }
