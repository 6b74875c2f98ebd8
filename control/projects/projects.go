package projects

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Project is a project as clients see it and as it is stored.
type Project struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	OwnerID     string    `json:"owner_id"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// ProjectView is a project with the caller's role on it.
type ProjectView struct {
	Project
	// Role is the caller's: owner, manager, operator or viewer.
	Role string `json:"role"`
}

// Pagination is data.pagination of a list (domain.Pagination under the
// name the API documents for this package's lists).
type Pagination struct {
	Total      int `json:"total"`
	Page       int `json:"page"`
	Limit      int `json:"limit"`
	TotalPages int `json:"totalPages"`
}

// ProjectList is the answer of GET /api/v1/projects.
type ProjectList struct {
	Projects   []ProjectView `json:"projects"`
	Pagination Pagination    `json:"pagination"`
}

const (
	maxName        = 100
	maxDescription = 2000
	pageLimitMax   = 100
	pageLimitDef   = 20
)

// ProjectInput is the body of POST and PUT /api/v1/projects.
type ProjectInput struct {
	Name        string `json:"name" required:"true"`
	Description string `json:"description,omitempty"`
}

// Validate checks name and description.
func (in *ProjectInput) Validate() error {
	if err := cleanName("name", &in.Name); err != nil {
		return err
	}
	return checkDescription(in.Description)
}

// ProjectPatch is the body of PATCH /api/v1/projects/{id}.
type ProjectPatch struct {
	Name        *string `json:"name,omitempty"`
	Description *string `json:"description,omitempty"`
}

// Validate demands a change and checks it.
func (in *ProjectPatch) Validate() error {
	if in.Name == nil && in.Description == nil {
		return fault.Invalid("body", "give name, description or both")
	}
	if in.Name != nil {
		if err := cleanName("name", in.Name); err != nil {
			return err
		}
	}
	if in.Description != nil {
		return checkDescription(*in.Description)
	}
	return nil
}

// AdminProjectInput is the body of POST /api/v1/admin/projects.
type AdminProjectInput struct {
	OwnerID string `json:"owner_id" required:"true"`
	Name    string `json:"name" required:"true"`
}

// Validate checks owner_id's presence and the name.
func (in *AdminProjectInput) Validate() error {
	if in.OwnerID == "" {
		return fault.Invalid("owner_id", "is required")
	}
	return cleanName("name", &in.Name)
}

// cleanName trims the display name *s in place and checks it: 1-100
// characters, no control characters.
func cleanName(field string, s *string) error {
	t := strings.TrimSpace(*s)
	if t == "" {
		return fault.Invalid(field, "is required")
	}
	if !utf8.ValidString(t) || utf8.RuneCountInString(t) > maxName {
		return fault.Invalid(field, "must be 1-%d characters", maxName)
	}
	if strings.ContainsFunc(t, unicode.IsControl) {
		return fault.Invalid(field, "must not contain control characters")
	}
	*s = t
	return nil
}

func checkDescription(s string) error {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxDescription {
		return fault.Invalid("description", "must be at most %d characters", maxDescription)
	}
	return nil
}

func (s *Service) now() time.Time { return s.env.Clock.Now().UTC() }

func (s *Service) event(tx *store.Tx, ctx context.Context, ev events.Event) error {
	if p, ok := auth.FromContext(ctx); ok {
		ev.ActorID = p.UserID
	}
	ev.IP = auth.ClientIP(ctx)
	_, err := s.env.Events.Append(tx, ev)
	return err
}

func roleName(lv level) string {
	switch lv {
	case roleOwner:
		return "owner"
	case roleManager:
		return RoleManager
	case roleOperator:
		return RoleOperator
	case roleViewer:
		return RoleViewer
	}
	return ""
}

func (s *Service) createProject(ctx context.Context, ownerID, name, desc string) (*Project, error) {
	now := s.now()
	p := &Project{ID: newID(), Name: name, Description: desc, OwnerID: ownerID, CreatedAt: now, UpdatedAt: now}
	return domain.Transact(ctx, s.db.UpdateContext, "create the project", func(tx *store.Tx) (*Project, error) {
		if err := tx.Put(bucketProjects, p.ID, p); err != nil {
			return nil, err
		}
		return p, s.event(tx, ctx, events.Event{EventType: "project.created", ResourceType: "project", ResourceID: p.ID,
			ProjectID: p.ID, Payload: events.Payload(map[string]any{"name": p.Name, "owner_id": ownerID})})
	})
}

// CreateProject creates a project owned by the caller.
func (s *Service) CreateProject(ctx context.Context, in ProjectInput) (*ProjectView, error) {
	c, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	p, err := s.createProject(ctx, c.UserID, in.Name, in.Description)
	if err != nil {
		return nil, err
	}
	return &ProjectView{Project: *p, Role: "owner"}, nil
}

// AdminCreateProject creates a project for owner_id (admins only).
func (s *Service) AdminCreateProject(ctx context.Context, in AdminProjectInput) (*Project, error) {
	if _, err := platform.AdminCaller(ctx); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := s.accountExists(ctx, "owner_id", in.OwnerID); err != nil {
		return nil, err
	}
	return s.createProject(ctx, in.OwnerID, in.Name, "")
}

// accountExists is 400 naming field when no account has id.
func (s *Service) accountExists(ctx context.Context, field, id string) error {
	err := s.userExists(ctx, func(string) string { return id })
	if pe := fault.AsError(err); err != nil && pe.Code == fault.CodeNotFound {
		return fault.Invalid(field, "no account has this id")
	}
	return err
}

// ListProjects lists the projects the caller owns or is permitted on.
func (s *Service) ListProjects(ctx context.Context, in PageInput) (*ProjectList, error) {
	page, limit := in.Page, in.Limit
	c, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkPage(page, limit); err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.db.ViewContext, "list projects", func(tx *store.Tx) (*ProjectList, error) {
		// The projects the caller is a member of: those whose permission
		// record exists (its level is their role).
		var ids, permKeys []string
		if err := tx.ForEachPrefix(bucketByMember, c.UserID+"/", func(k string, raw []byte) error {
			id := k[len(c.UserID)+1:]
			ids, permKeys = append(ids, id), append(permKeys, id+"/"+string(raw))
			return nil
		}); err != nil {
			return nil, err
		}
		perms, err := tx.GetRawMany(bucketPerms, permKeys)
		if err != nil {
			return nil, err
		}
		alts := []store.Filter{store.Where("owner_id", store.Eq, c.UserID)}
		var member []string
		for i, raw := range perms {
			if raw != nil {
				member = append(member, ids[i])
			}
		}
		for chunk := range slices.Chunk(member, store.MaxInValues) {
			alts = append(alts, store.Where("key", store.In, chunk))
		}
		pg, err := store.PageOf[Project](tx, projectTable, store.Query{Filters: []store.Filter{store.AnyOf(alts...)},
			Sort: []string{"created_at"}, Offset: (page - 1) * limit, Limit: limit})
		if err != nil {
			return nil, err
		}
		levels, err := callerLevels(tx, pg.Items, c.UserID)
		if err != nil {
			return nil, err
		}
		out := &ProjectList{Projects: []ProjectView{}, Pagination: Pagination(domain.Paginate(pg.Total, page, limit))}
		for i, p := range pg.Items {
			out.Projects = append(out.Projects, ProjectView{Project: p, Role: roleName(levels[i])})
		}
		return out, nil
	})
}

// checkPage is the rule of every list's page and limit (the route's query
// declaration refuses the same values over HTTP).
func checkPage(page, limit int) error {
	if page < 1 {
		return fault.Invalid("page", "must be at least 1")
	}
	if limit < 1 || limit > pageLimitMax {
		return fault.Invalid("limit", "must be 1-%d", pageLimitMax)
	}
	return nil
}

// GetProject is one project (the route's policy admitted the caller).
func (s *Service) GetProject(ctx context.Context, ref ProjectRef) (*ProjectView, error) {
	id := ref.ID
	c, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.db.ViewContext, "read the project", func(tx *store.Tx) (*ProjectView, error) {
		p, lv, err := projectAt(tx, id, c.UserID, roleViewer)
		if err != nil {
			return nil, err
		}
		return &ProjectView{Project: *p, Role: roleName(lv)}, nil
	})
}

// ProjectReplace is PUT /api/v1/projects/{id}.
type ProjectReplace struct {
	ProjectRef
	Body ProjectInput
}

// ProjectChange is PATCH /api/v1/projects/{id}.
type ProjectChange struct {
	ProjectRef
	Body ProjectPatch
}

// ReplaceProject sets a project's name and description (an absent
// description becomes empty).
func (s *Service) ReplaceProject(ctx context.Context, in ProjectReplace) (*ProjectView, error) {
	return s.updateProject(ctx, in.ID, ProjectPatch{Name: &in.Body.Name, Description: &in.Body.Description}, true)
}

// ChangeProject changes a project's name, description or both.
func (s *Service) ChangeProject(ctx context.Context, in ProjectChange) (*ProjectView, error) {
	return s.updateProject(ctx, in.ID, in.Body, false)
}

// updateProject applies a PUT (replace) or PATCH (merge) to project id;
// managers and the owner only.
func (s *Service) updateProject(ctx context.Context, id string, in ProjectPatch, replace bool) (*ProjectView, error) {
	c, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.db.UpdateContext, "update the project", func(tx *store.Tx) (*ProjectView, error) {
		p, lv, err := projectAt(tx, id, c.UserID, roleManager)
		if err != nil {
			return nil, err
		}
		changes := map[string]any{}
		if in.Name != nil && *in.Name != p.Name {
			changes["name"] = *in.Name
			p.Name = *in.Name
		}
		desc := in.Description
		if replace && desc == nil {
			empty := ""
			desc = &empty
		}
		if desc != nil && *desc != p.Description {
			changes["description"] = *desc
			p.Description = *desc
		}
		if len(changes) > 0 {
			p.UpdatedAt = s.now()
			if err := tx.Put(bucketProjects, p.ID, p); err != nil {
				return nil, err
			}
			if err := s.event(tx, ctx, events.Event{EventType: "project.updated", ResourceType: "project", ResourceID: p.ID,
				ProjectID: p.ID, Payload: events.Payload(changes)}); err != nil {
				return nil, err
			}
		}
		return &ProjectView{Project: *p, Role: roleName(lv)}, nil
	})
}

// DeleteProject removes a project without containers, its permissions and
// its proxy permissions document (owner only).
func (s *Service) DeleteProject(ctx context.Context, ref ProjectRef) error {
	id := ref.ID
	c, err := platform.Caller(ctx)
	if err != nil {
		return err
	}
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		p, err := findProject(tx, id)
		if err != nil {
			return err
		}
		if p.OwnerID != c.UserID {
			return errNoProjectAccess
		}
		if cs, err := projectContainers(tx, id, 1); err != nil || len(cs) > 0 {
			if err != nil {
				return err
			}
			return fault.Errorf(fault.CodeConflict, "the project still has containers")
		}
		if err := projectHasWorkspaces(tx, id); err != nil {
			return err
		}
		perms, err := store.Under[Permission](tx, bucketPerms, id+"/")
		if err != nil {
			return err
		}
		for _, pm := range perms {
			if err := tx.Delete(bucketPerms, id+"/"+pm.ID); err != nil {
				return err
			}
			if err := tx.Delete(bucketByMember, pm.UserID+"/"+id); err != nil {
				return err
			}
		}
		if err := tx.Delete(bucketDocs, projectDocKey(id)); err != nil {
			return err
		}
		if err := tx.Delete(bucketProjects, id); err != nil {
			return err
		}
		return s.event(tx, ctx, events.Event{EventType: "project.deleted", ResourceType: "project", ResourceID: id, ProjectID: id,
			Payload: events.Payload(map[string]any{"name": p.Name})})
	})
	return fault.Wrap("delete the project", err)
}
