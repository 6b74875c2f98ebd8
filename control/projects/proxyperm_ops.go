package projects

import (
	"context"
	"maps"

	"deckhand/platform/fault"
	"deckhand/platform/openapi"
	"deckhand/platform/proxyperm"
)

// The document writes. Each is a mutation (domain logic, no HTTP) that
// writeDoc applies under the If-Match check. Every write's input embeds
// DocWrite, whose If-Match is checked before the body is read (428 when
// absent), so a stale or missing version answers before a bad body.

// docOps are the document's operations in one scope (a container's or a
// project's document): the route table binds each to its paths.
type docOps struct {
	s  *Service
	sc docScope
}

// DocRef names the document of a container or a project by its path id.
type DocRef struct {
	ID string `path:"id" doc:"the container's or the project's id"`
}

// DocWrite is a write's path id and version.
type DocWrite struct {
	DocRef
	IfMatch string `header:"If-Match" doc:"file:v<n>, the document's current file_version (file:v0 when no document exists); absent: 428; stale: 412"`
	want    int64
}

// ValidateParams reads the If-Match version: 428 when absent, 400 when
// malformed.
func (w *DocWrite) ValidateParams() error {
	if w.IfMatch == "" {
		return &fault.Error{Code: fault.CodePreconditionRequired, Details: "If-Match",
			Message: "this write needs an If-Match: file:v<n> header with the document's current file_version (file:v0 when none exists)"}
	}
	n, ok := proxyperm.ParseETag(w.IfMatch)
	if !ok {
		return fault.Invalid("If-Match", "must be file:v<n>")
	}
	w.want = n
	return nil
}

// GroupWrite is a write to one group of the document.
type GroupWrite struct {
	DocWrite
	GroupName string `path:"groupName" doc:"a group name: a letter or digit, then up to 63 letters, digits, '_', '.' or '-'"`
}

// ValidateParams checks If-Match, then the group name.
func (w *GroupWrite) ValidateParams() error {
	if err := w.DocWrite.ValidateParams(); err != nil {
		return err
	}
	return proxyperm.ValidGroupName("groupName", w.GroupName)
}

// DocumentBody is a whole document as PUT: decoded by proxyperm.Decode
// (access rules in every form, errors naming permissions.<group>.<program>).
type DocumentBody struct {
	doc *proxyperm.Document
}

// UnmarshalJSON decodes and validates the document.
func (b *DocumentBody) UnmarshalJSON(raw []byte) error {
	d, err := proxyperm.Decode(raw)
	if err != nil {
		return err
	}
	b.doc = d
	return nil
}

// JSONSchema is the document's.
func (*DocumentBody) JSONSchema() map[string]any { return openapi.Schema(proxyperm.Document{}) }

// DocumentPut is the whole-document PUT.
type DocumentPut struct {
	DocWrite
	Body DocumentBody
}

// DefaultPut is PATCH .../default.
type DefaultPut struct {
	DocWrite
	Body DefaultInput
}

// StatePut is PATCH .../state.
type StatePut struct {
	DocWrite
	Body StateInput
}

// RulePut is PUT .../permissions/{groupName}.
type RulePut struct {
	GroupWrite
	Body PermissionInput
}

// GroupPut is PUT .../groups/{groupName}/<type>.
type GroupPut struct {
	GroupWrite
	Body proxyperm.Group
}

// DocAnswer is a document as people read it (masked), with its ETag.
type DocAnswer struct {
	ETag string `header:"ETag" doc:"the document's etag, quoted"`
	Body *proxyperm.Document
}

func docAnswer(d *proxyperm.Document) *DocAnswer {
	return &DocAnswer{ETag: `"` + d.ETag + `"`, Body: d.Mask()}
}

// Get is the document, masked (404 when none).
func (o docOps) Get(ctx context.Context, ref DocRef) (*DocAnswer, error) {
	d, err := o.s.document(ctx, o.sc, ref.ID)
	if err != nil {
		return nil, err
	}
	return docAnswer(d), nil
}

func (o docOps) write(ctx context.Context, w DocWrite, m mutation) (*DocAnswer, error) {
	d, err := o.s.writeDoc(ctx, o.sc, w.ID, w.want, m)
	if err != nil {
		return nil, err
	}
	return docAnswer(d), nil
}

// Replace replaces the whole document.
func (o docOps) Replace(ctx context.Context, in DocumentPut) (*DocAnswer, error) {
	if in.Body.doc == nil {
		return nil, fault.Invalid("body", "must be a proxy permissions document")
	}
	m, err := replaceDoc(in.Body.doc)
	if err != nil {
		return nil, err
	}
	return o.write(ctx, in.DocWrite, m)
}

// Delete removes the document.
func (o docOps) Delete(ctx context.Context, in DocWrite) error {
	_, err := o.s.writeDoc(ctx, o.sc, in.ID, in.want, deleteDoc)
	return err
}

// SetDefault sets the default policy.
func (o docOps) SetDefault(ctx context.Context, in DefaultPut) (*DocAnswer, error) {
	return o.write(ctx, in.DocWrite, setDefault(in.Body))
}

// SetState enables or disables the proxy.
func (o docOps) SetState(ctx context.Context, in StatePut) (*DocAnswer, error) {
	return o.write(ctx, in.DocWrite, setState(in.Body))
}

// RemoveGroup removes a group.
func (o docOps) RemoveGroup(ctx context.Context, in GroupWrite) (*DocAnswer, error) {
	return o.write(ctx, in.DocWrite, removeGroup(in.GroupName))
}

// SetRule sets one program rule of a group.
func (o docOps) SetRule(ctx context.Context, in RulePut) (*DocAnswer, error) {
	return o.write(ctx, in.DocWrite, putRule(in.GroupName, in.Body))
}

// groupOps puts groups of one type.
type groupOps struct {
	docOps
	typ string
}

// Put adds or replaces a group of the path's type.
func (o groupOps) Put(ctx context.Context, in GroupPut) (*DocAnswer, error) {
	g := in.Body
	if g.Type != "" && g.Type != o.typ {
		return nil, fault.Invalid("type", "must be %s (or absent) on this path", o.typ)
	}
	g.Type = o.typ
	if err := g.Validate(""); err != nil {
		return nil, err
	}
	if err := g.Normalize(); err != nil {
		return nil, fault.Internal("hash the password", err)
	}
	return o.write(ctx, in.DocWrite, putGroup(in.GroupName, g))
}

// edit is a mutation that changes the current (or a new empty) document.
func edit(f func(d *proxyperm.Document) ([]docEvent, error)) mutation {
	return func(cur *proxyperm.Document, project, container string) (*proxyperm.Document, []docEvent, error) {
		d := emptyDoc(project, container)
		if cur != nil {
			d = cur
		}
		evs, err := f(d)
		if err != nil {
			return nil, nil, err
		}
		return d, evs, nil
	}
}

// replaceDoc replaces the whole document with d (validated; passwords are
// hashed here, before the transaction). A masked group (a document read
// back as it was answered) keeps the stored secret of its name.
func replaceDoc(d *proxyperm.Document) (mutation, error) {
	if err := d.Normalize(); err != nil {
		return nil, fault.Internal("hash the passwords", err)
	}
	return func(cur *proxyperm.Document, project, container string) (*proxyperm.Document, []docEvent, error) {
		if d.Container != container {
			return nil, nil, fault.Invalid("container", "must equal the path id %q", container)
		}
		if d.Project != project {
			return nil, nil, fault.Invalid("project", "must be the id of the owning project")
		}
		next := *d
		next.Groups = maps.Clone(d.Groups) // a retried transaction starts from the body again
		if err := next.Unmask(cur); err != nil {
			return nil, nil, err
		}
		return &next, append(groupChanges(cur, &next), policyChanges(cur, &next)...), nil
	}, nil
}

// deleteDoc removes the document (404 when none).
func deleteDoc(cur *proxyperm.Document, _, _ string) (*proxyperm.Document, []docEvent, error) {
	if cur == nil {
		return nil, nil, errNoDocument
	}
	evs := groupChanges(cur, &proxyperm.Document{}) // every group removed
	evs = append(evs, docEvent{"default_changed", map[string]any{"from": cur.Default, "to": nil, "document": "deleted"}})
	return nil, evs, nil
}

func setDefault(in DefaultInput) mutation {
	return edit(func(d *proxyperm.Document) ([]docEvent, error) {
		if d.Default == in.Default {
			return nil, nil
		}
		from := d.Default
		d.Default = in.Default
		return []docEvent{{"default_changed", map[string]any{"from": from, "to": in.Default}}}, nil
	})
}

func setState(in StateInput) mutation {
	return edit(func(d *proxyperm.Document) ([]docEvent, error) {
		if d.Proxy() == *in.EnableProxy {
			return nil, nil
		}
		v := *in.EnableProxy
		d.EnableProxy = &v
		return []docEvent{{"default_changed", map[string]any{"enable_proxy": v}}}, nil
	})
}

// putGroup adds or replaces group name (validated and normalized); a
// masked field keeps the stored group's secret.
func putGroup(name string, body proxyperm.Group) mutation {
	return edit(func(d *proxyperm.Document) ([]docEvent, error) {
		g := body
		kind := "group_added"
		old, ok := d.Groups[name]
		if ok {
			kind = "group_updated"
		} else if len(d.Groups) >= proxyperm.MaxGroups {
			return nil, fault.Invalid("groupName", "the document holds the maximum of %d groups", proxyperm.MaxGroups)
		}
		if g.Masked() {
			var stored *proxyperm.Group
			if ok {
				stored = &old
			}
			if err := g.Unmask("", stored); err != nil {
				return nil, err
			}
		}
		d.Groups[name] = g
		return []docEvent{{kind, map[string]any{"group": name, "type": g.Type}}}, nil
	})
}

// removeGroup deletes group name; rules naming it stay.
func removeGroup(name string) mutation {
	return edit(func(d *proxyperm.Document) ([]docEvent, error) {
		g, ok := d.Groups[name]
		if !ok {
			return nil, fault.NotFound("group", name)
		}
		delete(d.Groups, name)
		return []docEvent{{"group_removed", map[string]any{"group": name, "type": g.Type}}}, nil
	})
}

// putRule sets one program rule of group name.
func putRule(name string, in PermissionInput) mutation {
	return edit(func(d *proxyperm.Document) ([]docEvent, error) {
		rules := d.Permissions[name]
		if rules == nil {
			if len(d.Permissions) >= proxyperm.MaxGroups {
				return nil, fault.Invalid("groupName", "the document holds rules for the maximum of %d groups", proxyperm.MaxGroups)
			}
			rules = proxyperm.Rules{}
			d.Permissions[name] = rules
		}
		rules[in.Program] = in.access
		return []docEvent{{"group_updated", map[string]any{"group": name, "program": in.Program, "rule": "permissions"}}}, nil
	})
}
