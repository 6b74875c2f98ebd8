package projects

import (
	"context"
	"sort"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Permission grants a user a role on a project.
type Permission struct {
	ID        string    `json:"id"`
	ProjectID string    `json:"project_id"`
	UserID    string    `json:"user_id"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

const roleRule = "must be viewer, operator or manager"

// GrantInput is the body of POST /api/v1/projects/{id}/permissions.
type GrantInput struct {
	UserID string `json:"user_id,omitempty" doc:"the account's id; give user_id or email"`
	Email  string `json:"email,omitempty" maxLength:"254" doc:"the account's email address (any spelling of it), instead of user_id"`
	Role   string `json:"role" required:"true" enum:"viewer,operator,manager"`
}

// Validate checks user_id or email, and role.
func (in *GrantInput) Validate() error {
	switch {
	case in.UserID == "" && in.Email == "":
		return fault.Invalid("user_id", "user_id or email is required")
	case in.UserID != "" && in.Email != "":
		return fault.Invalid("user_id", "send either user_id or email, not both")
	}
	if levelOf(in.Role) == roleNone {
		return fault.Invalid("role", roleRule)
	}
	return nil
}

// RoleInput is the body of PUT and PATCH of one permission.
type RoleInput struct {
	Role string `json:"role" required:"true" enum:"viewer,operator,manager"`
}

// Validate checks role.
func (in *RoleInput) Validate() error {
	if levelOf(in.Role) == roleNone {
		return fault.Invalid("role", roleRule)
	}
	return nil
}

// PermissionRef names one permission of a project.
type PermissionRef struct {
	ProjectRef
	PermissionID string `path:"permissionId" doc:"a permission id: 1-40 lowercase letters or digits"`
}

// ValidateParams checks the permission id's format.
func (r *PermissionRef) ValidateParams() error { return validID("permissionId", r.PermissionID) }

// GrantRequest is POST /api/v1/projects/{id}/permissions.
type GrantRequest struct {
	ProjectRef
	Body GrantInput
}

// RoleChange is PUT and PATCH of one permission.
type RoleChange struct {
	PermissionRef
	Body RoleInput
}

// ListPermissions lists project id's permissions.
func (s *Service) ListPermissions(ctx context.Context, ref ProjectRef) ([]Permission, error) {
	id := ref.ID
	out, err := domain.Transact(ctx, s.db.ViewContext, "list permissions", func(tx *store.Tx) ([]Permission, error) {
		perms, err := store.Under[Permission](tx, bucketPerms, id+"/")
		return nonNil(perms), err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Grant gives in.UserID in.Role on project id.
func (s *Service) Grant(ctx context.Context, req GrantRequest) (*Permission, error) {
	id, in := req.ID, req.Body
	if _, err := platform.Caller(ctx); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.Email != "" {
		uid, err := s.env.Accounts.IDByEmail(ctx, in.Email)
		if err != nil {
			return nil, err
		}
		if uid == "" {
			return nil, fault.Invalid("email", "no account has this email address")
		}
		in.UserID = uid
	}
	if err := s.accountExists(ctx, "user_id", in.UserID); err != nil {
		return nil, err
	}
	now := s.now()
	perm := &Permission{ID: newID(), ProjectID: id, UserID: in.UserID, Role: in.Role, CreatedAt: now, UpdatedAt: now}
	return domain.Transact(ctx, s.db.UpdateContext, "grant the permission", func(tx *store.Tx) (*Permission, error) {
		p, err := findProject(tx, id)
		if err != nil {
			return nil, err
		}
		if p.OwnerID == in.UserID {
			return nil, fault.Invalid("user_id", "names the project's owner, who holds every right already")
		}
		if tx.GetRaw(bucketByMember, in.UserID+"/"+id) != nil {
			return nil, fault.Errorf(fault.CodeConflict, "this user already has a permission on the project; change its role with PUT or PATCH")
		}
		if err := tx.Put(bucketPerms, id+"/"+perm.ID, perm); err != nil {
			return nil, err
		}
		if err := tx.PutRaw(bucketByMember, in.UserID+"/"+id, []byte(perm.ID)); err != nil {
			return nil, err
		}
		return perm, s.event(tx, ctx, events.Event{EventType: "project.permission.granted", ResourceType: "project", ResourceID: id, ProjectID: id,
			Payload: events.Payload(map[string]any{"permission_id": perm.ID, "user_id": in.UserID, "role": in.Role})})
	})
}

// getPermission is permission permID of project projectID (404 when none).
func getPermission(tx *store.Tx, projectID, permID string) (*Permission, error) {
	var p Permission
	ok, err := tx.Get(bucketPerms, projectID+"/"+permID, &p)
	if err == nil && !ok {
		err = fault.NotFound("permission", permID)
	}
	return &p, err
}

// SetRole changes a permission's role.
func (s *Service) SetRole(ctx context.Context, req RoleChange) (*Permission, error) {
	id, permID, in := req.ID, req.PermissionID, req.Body
	if err := req.ValidateParams(); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.db.UpdateContext, "update the permission", func(tx *store.Tx) (*Permission, error) {
		p, err := getPermission(tx, id, permID)
		if err != nil || p.Role == in.Role {
			return p, err
		}
		from := p.Role
		p.Role, p.UpdatedAt = in.Role, s.now()
		if err := tx.Put(bucketPerms, id+"/"+p.ID, p); err != nil {
			return nil, err
		}
		return p, s.event(tx, ctx, events.Event{EventType: "project.permission.updated", ResourceType: "project", ResourceID: id, ProjectID: id,
			Payload: events.Payload(map[string]any{"permission_id": p.ID, "user_id": p.UserID, "from": from, "to": in.Role})})
	})
}

// Revoke removes a permission.
func (s *Service) Revoke(ctx context.Context, ref PermissionRef) error {
	id, permID := ref.ID, ref.PermissionID
	if err := ref.ValidateParams(); err != nil {
		return err
	}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		p, err := getPermission(tx, id, permID)
		if err != nil {
			return err
		}
		if err := tx.Delete(bucketPerms, id+"/"+p.ID); err != nil {
			return err
		}
		if err := tx.Delete(bucketByMember, p.UserID+"/"+id); err != nil {
			return err
		}
		return s.event(tx, ctx, events.Event{EventType: "project.permission.revoked", ResourceType: "project", ResourceID: id, ProjectID: id,
			Payload: events.Payload(map[string]any{"permission_id": p.ID, "user_id": p.UserID, "role": p.Role})})
	})
	return fault.Wrap("revoke the permission", err)
}
