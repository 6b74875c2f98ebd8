package vault

import (
	"strconv"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Routes is the vault's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"vault"}
	ifMatch := platform.Param{Name: "If-Match", In: "header", Description: `"N" (the ETag): write only at version N, else 412; * : only an existing key`}
	ifNone := platform.Param{Name: "If-None-Match", In: "header", Description: "*: create only (412 when the key exists)"}
	return []platform.Route{
		{Method: "GET", Path: "/api/v1/vault/keys", Tags: tags, Summary: "List keys (never values)",
			Description: "Live keys in key order with version, times, expiry and value size; never values. Page with after=next.",
			Query: []platform.Param{
				{Name: "prefix", Description: "only keys starting with this; at most " + strconv.Itoa(MaxKeyLen) + " of the key characters A-Z a-z 0-9 . _ - (else 400)"},
				{Name: "after", Description: "start after this key (the previous page's next); the key rule as for prefix (else 400)"},
				{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: 10000}, Default: "1000", Description: "at most this many keys"},
			},
			Response: List{}, Handler: s.handleList},
		{Method: "GET", Path: "/api/v1/vault/keys/{key}", Tags: tags, Summary: "Read a key",
			Description: "The value with its version (also the ETag) and times. Expired keys are 404.",
			Response:    Record{}, Handler: s.handleGet},
		{Method: "PUT", Path: "/api/v1/vault/keys/{key}", Tags: tags, Summary: "Store a value",
			Description: "Creates (201) or replaces (200) the key's value; the version goes up by one. ttl_seconds sets an expiry, " +
				"its absence removes one. A value over 1 MiB answers 413.",
			Query: []platform.Param{ifMatch, ifNone}, Body: Write{}, Response: Record{}, Status: 201, Handler: s.handlePut},
		{Method: "PATCH", Path: "/api/v1/vault/keys/{key}", Tags: tags, Summary: "Merge into an object value",
			Description: "Merges value (a JSON object) into the stored object as RFC 7396 merge patch (null removes a member). " +
				"404 when the key is absent, 409 when its value is not an object. ttl_seconds, when given, sets a new expiry.",
			Query: []platform.Param{ifMatch}, Body: Write{}, Response: Record{}, Handler: s.handlePatch},
		{Method: "DELETE", Path: "/api/v1/vault/keys/{key}", Tags: tags, Summary: "Remove a key",
			Description: "204 when removed, 404 when absent; with If-Match only at that version.",
			Query:       []platform.Param{ifMatch}, Status: 204, Handler: s.handleDelete},
		{Method: "GET", Path: "/api/v1/vault/stats", Tags: tags, Summary: "Vault statistics",
			Response: Stats{}, Handler: s.handleStats},
		{Method: "DELETE", Path: "/api/v1/vault", Tags: tags, Summary: "Wipe the vault",
			Description: "Removes every key in one transaction and answers how many.",
			Response:    Wiped{}, Handler: s.handleWipe},
	}
}

func (s *Service) handleList(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	out, err := s.ListKeys(c.Context(), q.String("prefix"), q.String("after"), int(q.Int("limit")))
	if err != nil {
		return err
	}
	return platform.JSON(c, fiber.StatusOK, out)
}

func etag(c fiber.Ctx, rec Record) {
	c.Set(fiber.HeaderETag, `"`+strconv.FormatInt(rec.Version, 10)+`"`)
}

func (s *Service) handleGet(c fiber.Ctx) error {
	rec, err := s.Get(c.Context(), c.Params("key"))
	if err != nil {
		return err
	}
	etag(c, rec)
	return platform.JSON(c, fiber.StatusOK, rec)
}

func (s *Service) decodeWrite(c fiber.Ctx) (Write, Precondition, error) {
	if err := ValidKey(c.Params("key")); err != nil {
		return Write{}, Precondition{}, err
	}
	p, err := ParsePrecondition(c.Get(fiber.HeaderIfMatch), c.Get(fiber.HeaderIfNoneMatch))
	if err != nil {
		return Write{}, p, err
	}
	var w Write
	err = platform.Decode(c, &w)
	return w, p, err
}

func (s *Service) handlePut(c fiber.Ctx) error {
	w, p, err := s.decodeWrite(c)
	if err != nil {
		return err
	}
	rec, created, err := s.Put(c.Context(), c.Params("key"), w, p)
	if err != nil {
		return err
	}
	etag(c, rec)
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return platform.JSON(c, status, rec)
}

func (s *Service) handlePatch(c fiber.Ctx) error {
	w, p, err := s.decodeWrite(c)
	if err != nil {
		return err
	}
	if p.NoneMatch {
		return platform.Invalid("If-None-Match", "PATCH changes an existing key; If-None-Match does not apply")
	}
	rec, err := s.Patch(c.Context(), c.Params("key"), w, p)
	if err != nil {
		return err
	}
	etag(c, rec)
	return platform.JSON(c, fiber.StatusOK, rec)
}

func (s *Service) handleDelete(c fiber.Ctx) error {
	p, err := ParsePrecondition(c.Get(fiber.HeaderIfMatch), "")
	if err != nil {
		return err
	}
	if err := s.Delete(c.Context(), c.Params("key"), p); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (s *Service) handleStats(c fiber.Ctx) error {
	st, err := s.Stats(c.Context())
	if err != nil {
		return err
	}
	return platform.JSON(c, fiber.StatusOK, st)
}

func (s *Service) handleWipe(c fiber.Ctx) error {
	w, err := s.Wipe(c.Context())
	if err != nil {
		return err
	}
	return platform.JSON(c, fiber.StatusOK, w)
}
