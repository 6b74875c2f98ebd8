package projects

import (
	"maps"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/proxyperm"
)

// The document writes. Each is a mutation (domain logic, no HTTP) that
// writeDoc applies under the If-Match check; docWrite is the HTTP layer
// they share: If-Match first (428 before the body is even read), then the
// body, then the write.

func (s *Service) docWrite(sc docScope, msg string, prepare func(c fiber.Ctx) (mutation, error)) fiber.Handler {
	return func(c fiber.Ctx) error {
		want, err := ifMatch(c)
		if err != nil {
			return err
		}
		m, err := prepare(c)
		if err != nil {
			return err
		}
		out, err := s.writeDoc(c.Context(), sc, c.Params("id"), want, m)
		if err != nil {
			return err
		}
		if out == nil {
			return platform.Respond(c, http.StatusOK, msg, nil)
		}
		return respondDoc(c, msg, out)
	}
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
		return nil, platform.Internal("hash the passwords", err)
	}
	return func(cur *proxyperm.Document, project, container string) (*proxyperm.Document, []docEvent, error) {
		if d.Container != container {
			return nil, nil, platform.Invalid("container", "must equal the path id %q", container)
		}
		if d.Project != project {
			return nil, nil, platform.Invalid("project", "must be the id of the owning project")
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
	var evs []docEvent
	for _, name := range cur.GroupNames() {
		evs = append(evs, docEvent{"group_removed", map[string]any{"group": name, "type": cur.Groups[name].Type}})
	}
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
			return nil, platform.Invalid("groupName", "the document holds the maximum of %d groups", proxyperm.MaxGroups)
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
			return nil, platform.NotFound("group", name)
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
				return nil, platform.Invalid("groupName", "the document holds rules for the maximum of %d groups", proxyperm.MaxGroups)
			}
			rules = proxyperm.Rules{}
			d.Permissions[name] = rules
		}
		rules[in.Program] = in.access
		return []docEvent{{"group_updated", map[string]any{"group": name, "program": in.Program, "rule": "permissions"}}}, nil
	})
}

func groupName(c fiber.Ctx) (string, error) {
	name := c.Params("groupName")
	return name, proxyperm.ValidGroupName("groupName", name)
}

// decodeGroup reads a group PUT body for type typ.
func decodeGroup(c fiber.Ctx, typ string) (string, proxyperm.Group, error) {
	var g proxyperm.Group
	name, err := groupName(c)
	if err != nil {
		return "", g, err
	}
	if err := platform.DecodeBytes(c.Body(), &g); err != nil {
		return "", g, err
	}
	if g.Type != "" && g.Type != typ {
		return "", g, platform.Invalid("type", "must be %s (or absent) on this path", typ)
	}
	g.Type = typ
	if err := g.Validate(""); err != nil {
		return "", g, err
	}
	if err := g.Normalize(); err != nil {
		return "", g, platform.Internal("hash the password", err)
	}
	return name, g, nil
}

func (s *Service) handlePutDoc(sc docScope) fiber.Handler {
	return s.docWrite(sc, "Proxy permissions replaced", func(c fiber.Ctx) (mutation, error) {
		d, err := proxyperm.Decode(c.Body())
		if err != nil {
			return nil, err
		}
		return replaceDoc(d)
	})
}

func (s *Service) handleDeleteDoc(sc docScope) fiber.Handler {
	return s.docWrite(sc, "Proxy permissions deleted", func(fiber.Ctx) (mutation, error) { return deleteDoc, nil })
}

func (s *Service) handleDefault(sc docScope) fiber.Handler {
	return s.docWrite(sc, "Default policy set", func(c fiber.Ctx) (mutation, error) {
		var in DefaultInput
		if err := platform.Decode(c, &in); err != nil {
			return nil, err
		}
		return setDefault(in), nil
	})
}

func (s *Service) handleState(sc docScope) fiber.Handler {
	return s.docWrite(sc, "Proxy state set", func(c fiber.Ctx) (mutation, error) {
		var in StateInput
		if err := platform.Decode(c, &in); err != nil {
			return nil, err
		}
		return setState(in), nil
	})
}

func (s *Service) handlePutGroup(sc docScope, typ string) fiber.Handler {
	return s.docWrite(sc, "Group saved", func(c fiber.Ctx) (mutation, error) {
		name, g, err := decodeGroup(c, typ)
		if err != nil {
			return nil, err
		}
		return putGroup(name, g), nil
	})
}

func (s *Service) handleDeleteGroup(sc docScope) fiber.Handler {
	return s.docWrite(sc, "Group removed", func(c fiber.Ctx) (mutation, error) {
		name, err := groupName(c)
		if err != nil {
			return nil, err
		}
		return removeGroup(name), nil
	})
}

func (s *Service) handlePutPermission(sc docScope) fiber.Handler {
	return s.docWrite(sc, "Permission set", func(c fiber.Ctx) (mutation, error) {
		name, err := groupName(c)
		if err != nil {
			return nil, err
		}
		var in PermissionInput
		if err := platform.Decode(c, &in); err != nil {
			return nil, err
		}
		return putRule(name, in), nil
	})
}
