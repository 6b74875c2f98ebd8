package projects

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/proxyperm"
	"deckhand/platform/store"
)

// A proxy permissions document belongs to a container (key c/<id>) or to a
// project (key p/<id>, container "*"). bucketDocVersion keeps each key's
// last version after a DELETE, so a re-created document continues the
// count: a client holding file:v3 of a deleted document cannot overwrite
// its successor (which starts at v4, created with file:v0).
func containerDocKey(id string) string { return "c/" + id }
func projectDocKey(id string) string   { return "p/" + id }

type docScope struct {
	project bool // project-level document
}

func (sc docScope) key(id string) string {
	if sc.project {
		return projectDocKey(id)
	}
	return containerDocKey(id)
}

// owner resolves the document's project and container fields for path id.
func (sc docScope) owner(tx *store.Tx, id string) (project, container string, err error) {
	if sc.project {
		p, err := getProject(tx, id)
		if err != nil {
			return "", "", err
		}
		if p == nil {
			return "", "", platform.NotFound("project", id)
		}
		return id, "*", nil
	}
	c, err := getContainer(tx, id)
	if err != nil {
		return "", "", err
	}
	if c == nil {
		return "", "", platform.NotFound("container", id)
	}
	return c.ProjectID, id, nil
}

func (s *Service) proxyRoutes() []platform.Route {
	var out []platform.Route
	for _, sc := range []docScope{{project: false}, {project: true}} {
		out = append(out, s.proxyRoutesFor(sc)...)
	}
	return append(out, s.effectiveRoute())
}

var ifMatchParam = platform.Param{Name: "If-Match", In: "header", Required: true,
	Description: "file:v<n>, the document's current file_version (file:v0 when no document exists); absent: 428; stale: 412"}

func (s *Service) proxyRoutesFor(sc docScope) []platform.Route {
	base := "/api/v1/containers/{id}/proxy/permissions"
	tag := []string{"container proxy permissions"}
	read := s.env.Authz.Policy(CheckContainerRead, "a member (owner or any permission) of the container's project")
	write := s.env.Authz.Policy(CheckContainerAccess, "the owner, an operator or a manager of the container's project")
	whose, short := "the container's", "The container's"
	if sc.project {
		base = "/api/v1/projects/{id}/proxy/permissions"
		tag = []string{"project proxy permissions"}
		read = s.env.Authz.Policy(CheckProjectMember, "the project's owner or a user its permissions name")
		write = s.env.Authz.Policy(CheckProjectManager, "the project's owner or a user with role manager on it")
		short = "The project's"
		whose = "the project's (`container` is \"*\"; it governs every container of the project without a document of its own)"
	}
	writes := " Needs `If-Match: file:v<n>` (file:v0 when no document exists, which creates one with default deny and enable_proxy true): " +
		"428 without it, 400 when malformed, 412 when n is not the current file_version. The check and the write are one transaction, " +
		"so of writers racing with the same version exactly one succeeds. Answers the whole updated document, masked (ETag header = etag). " +
		"A group may carry `secret_configured`, `password_configured` or `value_configured` true instead of the secret: the stored " +
		"secret of the group of that name and type is kept (400 naming the field when there is none), so a document read back PUTs " +
		"unchanged. Writing a new secret (a token value, an HS256 secret, a password) needs the project's manager role or its " +
		"ownership: an operator gets 403 for it, and may change everything else. Secrets are sealed under the master key at rest."
	q := []platform.Param{ifMatchParam}
	r := func(method, path, summary, desc string, body any, h fiber.Handler) platform.Route {
		pol, qs := write, q
		if method == http.MethodGet {
			pol, qs = read, nil
		} else {
			desc += writes
		}
		return platform.Route{Method: method, Path: base + path, Policy: pol, Tags: tag, Summary: summary, Description: desc,
			Query: qs, Body: body, Response: proxyperm.Document{}, Handler: h}
	}
	groupDesc := map[string]string{
		proxyperm.TypeJWT: "`secret` (any string for HS256; a PEM SPKI public key that parses for RS256 — RSA of at least 2048 bits — and ES256 — P-256), " +
			"`algorithm` (HS256, RS256, ES256), `sources` (header:<Name> or cookie:<Name>, at least one), `claims` (optional; string, number or boolean values).",
		proxyperm.TypePassword: "`username` and `password`: a plaintext password (no `algorithm`, no `salt`) is stored as an argon2id PHC string " +
			"($argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>) and `algorithm` becomes argon2id; `algorithm` argon2id takes such a string as it is; " +
			"`algorithm` sha256 takes a pre-hashed SHA256(salt + password) in 64 lowercase hex digits with its optional `salt` (still verified, " +
			"but one SHA-256 round is cheap to attack: prefer a plaintext password).",
		proxyperm.TypeIP:              "`range`: an IPv4 CIDR a.b.c.d/m, m 0-32.",
		proxyperm.TypeToken:           "Exactly one of `header`, `cookie` or `param` (the name), plus `value`.",
		proxyperm.TypeServiceIdentity: "`containers` and/or `projects`: the ids whose control-plane-signed container claims belong to the group.",
	}
	routes := []platform.Route{
		r(http.MethodGet, "", short+" proxy permissions document",
			"The document of "+whose+" with `file_version` and `etag`; 404 when none exists. Secrets are never shown: an HS256 `secret`, a "+
				"password's `password` hash and `salt` and a token's `value` are absent and `secret_configured`, `password_configured` or "+
				"`value_configured` is true instead (RS256 and ES256 public keys are shown). Only the container's agent reads them, "+
				"through the effective route with its agent token.",
			nil, s.handleGetDoc(sc)),
		r(http.MethodPut, "", "Replace the whole document",
			"Body: `project` (must equal the owning project), `container` (must equal the path id; \"*\" for a project document), `groups`, "+
				"`permissions` (group name → {program: access}), `default` (allow or deny, default deny), `enable_proxy` (default true), `hooks`. "+
				"Writes proxy.permissions.group_added / group_updated / group_removed per changed group and default_changed when default or enable_proxy changes.",
			proxyperm.Document{}, s.handlePutDoc(sc)),
		r(http.MethodDelete, "", "Delete the document",
			"404 when none exists. Writes group_removed per group and default_changed (document deleted).", nil, s.handleDeleteDoc(sc)),
		r(http.MethodPatch, "/default", "Set the default policy", "Body `default`: allow or deny. Writes proxy.permissions.default_changed when it changes.",
			DefaultInput{}, s.handleDefault(sc)),
		r(http.MethodPatch, "/state", "Enable or disable the proxy", "Body `enable_proxy` (boolean). Writes proxy.permissions.default_changed "+
			"(payload enable_proxy) when it changes.", StateInput{}, s.handleState(sc)),
		r(http.MethodDelete, "/groups/{groupName}", "Remove a group",
			"404 when no such group. Permission rules naming the group stay and match no identity. Writes proxy.permissions.group_removed.",
			nil, s.handleDeleteGroup(sc)),
		r(http.MethodPut, "/permissions/{groupName}", "Set one program rule of a group",
			"Body `program` (http, terminal, ssh, files, exec, services, notifications) and `access`: true, false, a port 1-65535, an array of ports, "+
				"a \"<from>-<to>\" range (from <= to) or \"*\". The group need not exist. Writes proxy.permissions.group_updated.",
			PermissionInput{}, s.handlePutPermission(sc)),
	}
	for _, typ := range proxyperm.Types {
		routes = append(routes, r(http.MethodPut, "/groups/{groupName}/"+typ, "Add or replace a "+typ+" group",
			groupDesc[typ]+" The body is the group without `type` (or with the same type). Writes proxy.permissions.group_added or group_updated.",
			proxyperm.Group{}, s.handlePutGroup(sc, typ)))
	}
	return routes
}

// DefaultInput is the body of PATCH .../default.
type DefaultInput struct {
	Default string `json:"default" required:"true" enum:"allow,deny"`
}

// Validate checks default.
func (in *DefaultInput) Validate() error {
	if in.Default != proxyperm.Allow && in.Default != proxyperm.Deny {
		return platform.Invalid("default", "must be allow or deny")
	}
	return nil
}

// StateInput is the body of PATCH .../state.
type StateInput struct {
	EnableProxy *bool `json:"enable_proxy" required:"true"`
}

// Validate demands enable_proxy.
func (in *StateInput) Validate() error {
	if in.EnableProxy == nil {
		return platform.Invalid("enable_proxy", "is required (true or false)")
	}
	return nil
}

// PermissionInput is the body of PUT .../permissions/{groupName}.
type PermissionInput struct {
	Program string          `json:"program" required:"true"`
	Access  json.RawMessage `json:"access" required:"true"`

	access proxyperm.Access
}

// Validate checks the program and parses access.
func (in *PermissionInput) Validate() error {
	if in.Program == "" {
		return platform.Invalid("program", "is required")
	}
	if !proxyperm.IsProgram(in.Program) {
		return platform.Invalid("program", "must be one of http, terminal, ssh, files, exec, services, notifications")
	}
	a, err := proxyperm.DecodeAccess("access", in.Access)
	if err != nil {
		return err
	}
	in.access = a
	return nil
}

// ifMatch reads the If-Match version: 428 when absent, 400 when malformed.
func ifMatch(c fiber.Ctx) (int64, error) {
	h := c.Get(fiber.HeaderIfMatch)
	if h == "" {
		return 0, &platform.Error{Code: platform.CodePreconditionRequired, Details: "If-Match",
			Message: "this write needs an If-Match: file:v<n> header with the document's current file_version (file:v0 when none exists)"}
	}
	n, ok := proxyperm.ParseETag(h)
	if !ok {
		return 0, platform.Invalid("If-Match", "must be file:v<n>")
	}
	return n, nil
}

func stale(current int64) error {
	return &platform.Error{Code: platform.CodePreconditionFailed, Details: "If-Match",
		Message: "the document changed: its version is " + proxyperm.ETag(current) + "; read it again and retry"}
}

// docEvent is one proxy.permissions.* event of a write.
type docEvent struct {
	kind    string
	payload map[string]any
}

// mutation changes the current document (nil when none exists) into the
// one to store (nil deletes it) and lists its events.
type mutation func(cur *proxyperm.Document, project, container string) (*proxyperm.Document, []docEvent, error)

// writeDoc checks If-Match against the stored version and applies m, in
// one transaction: two writers with the same version cannot both pass.
func (s *Service) writeDoc(ctx context.Context, sc docScope, id string, want int64, m mutation) (*proxyperm.Document, error) {
	key := sc.key(id)
	var out *proxyperm.Document
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		out = nil
		project, container, err := sc.owner(tx, id)
		if err != nil {
			return err
		}
		cur, err := s.readDoc(tx, key)
		if err != nil {
			return err
		}
		have := int64(0)
		if cur != nil {
			have = cur.FileVersion
		}
		if want != have {
			return stale(have)
		}
		var before map[string]proxyperm.Group // m may edit cur in place
		if cur != nil {
			before = maps.Clone(cur.Groups)
		}
		next, evs, err := m(cur, project, container)
		if err != nil {
			return err
		}
		if next != nil && newSecrets(before, next) {
			if err := mayWriteSecrets(ctx, tx, project); err != nil {
				return err
			}
		}
		var last int64
		if _, err := tx.Get(bucketDocVersion, key, &last); err != nil {
			return err
		}
		version := max(last, have) + 1
		if err := tx.Put(bucketDocVersion, key, version); err != nil {
			return err
		}
		if next == nil {
			if err := tx.Delete(bucketDocs, key); err != nil {
				return err
			}
		} else {
			next.FileVersion, next.ETag = version, proxyperm.ETag(version)
			if err := s.putDoc(tx, key, next); err != nil {
				return err
			}
			out = next
		}
		for _, e := range evs {
			p := map[string]any{"file_version": version}
			for k, v := range e.payload {
				p[k] = v
			}
			ev := events.Event{EventType: "proxy.permissions." + e.kind, ResourceType: "proxy_permissions", ResourceID: id,
				ProjectID: project, Payload: events.Payload(p)}
			if !sc.project {
				ev.ContainerID = container
			}
			if err := s.event(tx, ctx, ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, storeErr("write the proxy permissions document", err)
	}
	return out, nil
}

var errNoDocument = &platform.Error{Code: platform.CodeNotFound, Details: "proxy_permissions",
	Message: "no proxy permissions document exists here; create one with If-Match: file:v0"}

// emptyDoc is the document a first write (file:v0) starts from.
func emptyDoc(project, container string) *proxyperm.Document {
	t := true
	return &proxyperm.Document{Project: project, Container: container, Groups: map[string]proxyperm.Group{},
		Permissions: map[string]proxyperm.Rules{}, Default: proxyperm.Deny, EnableProxy: &t}
}

// GetDocument is the stored document of path id (404 when none), masked:
// what people read (its secrets go only to the container's agent, through
// GetEffective).
func (s *Service) GetDocument(ctx context.Context, sc docScope, id string) (*proxyperm.Document, error) {
	d, err := s.document(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	return d.Mask(), nil
}

// document is the stored document of path id with its secrets.
func (s *Service) document(ctx context.Context, sc docScope, id string) (*proxyperm.Document, error) {
	var out *proxyperm.Document
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		d, err := s.readDoc(tx, sc.key(id))
		if err != nil {
			return err
		}
		if d == nil {
			return errNoDocument
		}
		out = d
		return nil
	})
	if err != nil {
		return nil, storeErr("read the proxy permissions document", err)
	}
	return out, nil
}

// respondDoc answers a person with d masked.
func respondDoc(c fiber.Ctx, msg string, d *proxyperm.Document) error {
	if d != nil {
		c.Set(fiber.HeaderETag, `"`+d.ETag+`"`)
		d = d.Mask()
	}
	return platform.Respond(c, http.StatusOK, msg, d)
}

func (s *Service) handleGetDoc(sc docScope) fiber.Handler {
	return func(c fiber.Ctx) error {
		d, err := s.GetDocument(c.Context(), sc, c.Params("id"))
		if err != nil {
			return err
		}
		return respondDoc(c, "Proxy permissions", d)
	}
}

// groupChanges lists the group events between two documents.
func groupChanges(from, to *proxyperm.Document) []docEvent {
	var evs []docEvent
	old := map[string]proxyperm.Group{}
	if from != nil {
		old = from.Groups
	}
	for _, name := range to.GroupNames() {
		g := to.Groups[name]
		o, had := old[name]
		switch {
		case !had:
			evs = append(evs, docEvent{"group_added", map[string]any{"group": name, "type": g.Type}})
		case !reflect.DeepEqual(o, g):
			evs = append(evs, docEvent{"group_updated", map[string]any{"group": name, "type": g.Type}})
		}
	}
	if from != nil {
		for _, name := range from.GroupNames() {
			if _, ok := to.Groups[name]; !ok {
				evs = append(evs, docEvent{"group_removed", map[string]any{"group": name, "type": from.Groups[name].Type}})
			}
		}
	}
	return evs
}

func policyChanges(from, to *proxyperm.Document) []docEvent {
	var evs []docEvent
	fromDefault, fromProxy := proxyperm.Deny, true
	if from != nil {
		fromDefault, fromProxy = from.Default, from.Proxy()
	}
	if to.Default != fromDefault || (from == nil && to.Default != proxyperm.Deny) {
		evs = append(evs, docEvent{"default_changed", map[string]any{"from": fromDefault, "to": to.Default}})
	}
	if to.Proxy() != fromProxy {
		evs = append(evs, docEvent{"default_changed", map[string]any{"enable_proxy": to.Proxy()}})
	}
	return evs
}
