package meta

import (
	"net/http"

	"deckhand/platform"
	"deckhand/platform/signing"
)

// Routes is the meta route table.
func (s *Service) Routes() []platform.Route {
	tag := []string{"meta"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/auth/available-regions", OperationID: "listAvailableRegions", Policy: platform.Public, Tags: tag,
			Summary: "Regions a free-tier server can be placed in",
			Description: "Public. `data.regions[]` lists region availability records. The list comes from " +
				"`<data>/regions.json` (or `--regions-file`), a JSON array of records or `{\"regions\": [...]}`; " +
				"without a file, built-in defaults are served.",
			Message: "Available regions", Op: platform.ReadOp(s.Regions)},
		{Method: http.MethodGet, Path: signing.PublicKeyPath, OperationID: "getSigningKeySet", Policy: platform.Public, Tags: tag,
			Summary: "Signing key set for responses, identity claims and container claims",
			Description: "Public. Every published key (old keys stay after `deckhand-control keys rotate`, so " +
				"earlier signatures keep verifying), the active kid and the signed-data formats. Clients cache " +
				"it at least 24 hours and re-fetch when a response names an unknown kid. Besides X-Service-Signature " +
				"(the active key), the answer carries one `" + signing.EndorsementHeader + "` header per key of the set, " +
				"each in the same format over the same `<t>.<body>`: a client that pins a key (the agent's `--control-key`, " +
				"or a set it accepted before) accepts a set announcing a new kid only when a key it already trusts signed it. " +
				"503 `SIGNING_NOT_CONFIGURED` when the server runs with `--signing=false`.",
			Message: "Signing key set", Op: platform.ReadOp(s.PublicKeys)},
	}
}
