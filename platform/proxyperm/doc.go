// Package proxyperm owns the proxy permissions document of docs/spec/interface.md
// (4.9 and "Proxy permissions document"): its type, the one validation both
// the control plane (which stores documents) and the agent's gateway (which
// enforces them, and loads --permissions-file) apply, the normalization of
// password groups (plaintext hashed on write), the masking of secrets and a
// compiled, evaluator-ready form (parsed CIDRs, public keys, password
// hashes and port sets), and the
// evaluation of one request against it (Policy.Evaluate: Facts in — program,
// port, client address, header/cookie/query lookups, time — and a Decision
// out: outcome, matched group and identity, a reason fit for the journal).
// It has no HTTP in it: reading requests is the gateway's business
// (agent/access builds the facts).
//
// Choices where the spec is silent:
//   - permissions maps a group name to an object of program name → access,
//     {"admins": {"terminal": true, "http": [80, 443]}}; program names are the
//     spec's list (http, terminal, ssh, files, exec, services, notifications);
//   - access forms: true, false, a port 1-65535, a non-empty array of ports, a
//     "<from>-<to>" range with from <= to, or "*";
//   - a password without algorithm is plaintext and is hashed with argon2id
//     (platform/secrets, a PHC string with its own random salt; a salt given
//     with it is refused); algorithm "argon2id" takes such a PHC string, and
//     "sha256" a pre-hashed hex(SHA256(salt + password)), still verified;
//   - the secrets (an HS256 secret, a password's hash and salt, a token's
//     value) are masked for people: Mask replaces each by
//     <field>_configured true, and Unmask puts the stored one back into a
//     document written with such a field; a masked document never compiles;
//   - service-identity groups name the allowed `containers` and/or `projects`
//     (at least one entry);
//   - group names are 1-64 of [A-Za-z0-9_.-] starting with a letter or digit;
//     a document has at most MaxGroups groups;
//   - an extension: any group may carry mcp_tools, the mcp service's tool
//     allow-list (tool names and prefixes ending in '*', never empty); a
//     decision asked for it (Facts.ToolList) answers the union of the
//     lists of the groups admitting the request (Decision.Tools). A
//     listed group is a boundary: it admits a request to the mcp service
//     (Facts.ToolList) or one that service makes for its caller
//     (Facts.ActingFor), never one sent straight to another service.
package proxyperm
