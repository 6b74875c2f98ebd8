package vault

import (
	"deckhand/platform"
)

// Routes is the vault's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"vault"}
	return []platform.Route{
		{Method: "GET", Path: "/api/v1/vault/keys", OperationID: "listKeys", Tags: tags, Summary: "List keys (never values)",
			Description: "Live keys in key order with version, times, expiry and value size; never values. Page with after=next.",
			Op:          platform.Op(s.List)},
		{Method: "GET", Path: "/api/v1/vault/keys/{key}", OperationID: "getKey", Tags: tags, Summary: "Read a key",
			Description: "The value with its version (also the ETag) and times. Expired keys are 404.",
			Op:          platform.Op(s.Read),
			Tool: &platform.Tool{Name: "vault_get", Title: "Read a vault key",
				Description: "Read a value from the container's vault (encrypted key-value store). Values may be secrets: do not " +
					"repeat them where they need not go.",
				ReadOnly: true, Idempotent: true}},
		{Method: "PUT", Path: "/api/v1/vault/keys/{key}", OperationID: "putKey", Tags: tags, Summary: "Store a value",
			Description: "Creates (201) or replaces (200) the key's value; the version goes up by one. ttl_seconds sets an expiry, " +
				"its absence removes one. A value over 1 MiB answers 413.",
			Status: 201, Statuses: []int{200}, Op: platform.Op(s.Store),
			Tool: &platform.Tool{Name: "vault_put", Title: "Write a vault key",
				Description: "Store a JSON value under a key in the container's vault, replacing any value; ttl_seconds makes it " +
					"expire. If-Match (the version, quoted) writes only over that version.",
				Text: "stored {{.key}} (version {{.version}})", Destructive: true, Idempotent: true}},
		{Method: "PATCH", Path: "/api/v1/vault/keys/{key}", OperationID: "patchKey", Tags: tags, Summary: "Merge into an object value",
			Description: "Merges value (a JSON object) into the stored object as RFC 7396 merge patch (null removes a member). " +
				"404 when the key is absent, 409 when its value is not an object. ttl_seconds, when given, sets a new expiry.",
			Op: platform.Op(s.Merge)},
		{Method: "DELETE", Path: "/api/v1/vault/keys/{key}", OperationID: "deleteKey", Tags: tags, Summary: "Remove a key",
			Description: "204 when removed, 404 when absent; with If-Match only at that version.",
			Status:      204, Op: platform.CommandOp(s.Remove)},
		{Method: "GET", Path: "/api/v1/vault/stats", OperationID: "getVaultStats", Tags: tags, Summary: "Vault statistics",
			Op: platform.ReadOp(s.Stats)},
		{Method: "DELETE", Path: "/api/v1/vault", OperationID: "wipeVault", Tags: tags, Summary: "Wipe the vault",
			Description: "Removes every key in one transaction and answers how many.",
			Op:          platform.ReadOp(s.Wipe)},
	}
}
