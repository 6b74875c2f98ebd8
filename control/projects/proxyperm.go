package projects

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"strings"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform/fault"
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
		_, err := findProject(tx, id)
		return id, "*", err
	}
	c, err := findContainer(tx, id)
	if err != nil {
		return "", "", err
	}
	return c.ProjectID, id, nil
}

// DefaultInput is the body of PATCH .../default.
type DefaultInput struct {
	Default string `json:"default" required:"true" enum:"allow,deny"`
}

// Validate checks default.
func (in *DefaultInput) Validate() error {
	if in.Default != proxyperm.Allow && in.Default != proxyperm.Deny {
		return fault.Invalid("default", "must be allow or deny")
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
		return fault.Invalid("enable_proxy", "is required (true or false)")
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
		return fault.Invalid("program", "is required")
	}
	if !proxyperm.IsProgram(in.Program) {
		return fault.Invalid("program", "must be one of %s", strings.Join(proxyperm.Programs, ", "))
	}
	a, err := proxyperm.DecodeAccess("access", in.Access)
	if err != nil {
		return err
	}
	in.access = a
	return nil
}

func stale(current int64) error {
	return &fault.Error{Code: fault.CodePreconditionFailed, Details: "If-Match",
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
	return domain.Transact(ctx, s.db.UpdateContext, "write the proxy permissions document", func(tx *store.Tx) (*proxyperm.Document, error) {
		project, container, err := sc.owner(tx, id)
		if err != nil {
			return nil, err
		}
		cur, err := s.readDoc(tx, key)
		if err != nil {
			return nil, err
		}
		have := int64(0)
		if cur != nil {
			have = cur.FileVersion
		}
		if want != have {
			return nil, stale(have)
		}
		var before map[string]proxyperm.Group // m may edit cur in place
		if cur != nil {
			before = maps.Clone(cur.Groups)
		}
		next, evs, err := m(cur, project, container)
		if err != nil {
			return nil, err
		}
		if next != nil && newSecrets(before, next) {
			if err := mayWriteSecrets(ctx, tx, project); err != nil {
				return nil, err
			}
		}
		var last int64
		if _, err := tx.Get(bucketDocVersion, key, &last); err != nil {
			return nil, err
		}
		version := max(last, have) + 1
		if err := tx.Put(bucketDocVersion, key, version); err != nil {
			return nil, err
		}
		if next == nil {
			if err := tx.Delete(bucketDocs, key); err != nil {
				return nil, err
			}
		} else {
			next.FileVersion, next.ETag = version, proxyperm.ETag(version)
			if err := s.putDoc(tx, key, next); err != nil {
				return nil, err
			}
		}
		for _, e := range evs {
			p := map[string]any{"file_version": version}
			maps.Copy(p, e.payload)
			ev := events.Event{EventType: "proxy.permissions." + e.kind, ResourceType: "proxy_permissions", ResourceID: id,
				ProjectID: project, Payload: events.Payload(p)}
			if !sc.project {
				ev.ContainerID = container
			}
			if err := s.event(tx, ctx, ev); err != nil {
				return nil, err
			}
		}
		return next, nil
	})
}

var errNoDocument = &fault.Error{Code: fault.CodeNotFound, Details: "proxy_permissions",
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
	return domain.Transact(ctx, s.db.ViewContext, "read the proxy permissions document", func(tx *store.Tx) (*proxyperm.Document, error) {
		d, err := s.readDoc(tx, sc.key(id))
		if err == nil && d == nil {
			err = errNoDocument
		}
		return d, err
	})
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
