package projects

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/events"
	"deckhand/platform"
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

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

func (s *Service) permissionRoutes() []platform.Route {
	tag := []string{"projects"}
	member := s.env.Authz.Policy(CheckProjectMember, "the project's owner or a user its permissions name")
	manager := s.env.Authz.Policy(CheckProjectManager, "the project's owner or a user with role manager on it")
	roles := "Roles: `viewer` reads the project, its containers and documents; `operator` also acts on its containers " +
		"(network, proxy permissions); `manager` also changes the project, its permissions and its project-level document. " +
		"The owner holds every right and cannot be named in a permission."
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/projects/{id}/permissions", Policy: member, Tags: tag,
			Summary: "The project's permissions, oldest first", Description: roles, Response: []Permission{}, Handler: s.handleListPerms},
		{Method: http.MethodPost, Path: "/api/v1/projects/{id}/permissions", Policy: manager, Tags: tag, Status: http.StatusCreated,
			Summary: "Grant a user a role on the project", Description: roles + " 400 when `user_id` names no account or the owner; " +
				"409 when the user already has a permission (change it with PUT or PATCH). Writes `project.permission.granted`.",
			Body: GrantInput{}, Response: Permission{}, Handler: s.handleGrant},
		{Method: http.MethodPut, Path: "/api/v1/projects/{id}/permissions/{permissionId}", Policy: manager, Tags: tag,
			Summary: "Set a permission's role", Description: roles + " Writes `project.permission.updated`.",
			Body: RoleInput{}, Response: Permission{}, Handler: s.handleSetRole},
		{Method: http.MethodPatch, Path: "/api/v1/projects/{id}/permissions/{permissionId}", Policy: manager, Tags: tag,
			Summary: "Change a permission's role", Description: roles + " Same as PUT: `role` is the only field. Writes `project.permission.updated`.",
			Body: RoleInput{}, Response: Permission{}, Handler: s.handleSetRole},
		{Method: http.MethodDelete, Path: "/api/v1/projects/{id}/permissions/{permissionId}", Policy: manager, Tags: tag,
			Summary: "Revoke a permission", Description: "Writes `project.permission.revoked`.", Handler: s.handleRevoke},
	}
}

// GrantInput is the body of POST /api/v1/projects/{id}/permissions.
type GrantInput struct {
	UserID string `json:"user_id" required:"true"`
	Role   string `json:"role" required:"true" enum:"viewer,operator,manager"`
}

// Validate checks user_id and role.
func (in *GrantInput) Validate() error {
	if in.UserID == "" {
		return platform.Invalid("user_id", "is required")
	}
	if levelOf(in.Role) == roleNone {
		return platform.Invalid("role", roleRule)
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
		return platform.Invalid("role", roleRule)
	}
	return nil
}

// ListPermissions lists project id's permissions.
func (s *Service) ListPermissions(ctx context.Context, id string) ([]Permission, error) {
	out := []Permission{}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		return tx.ForEachPrefix(bucketPerms, id+"/", func(_ string, raw []byte) error {
			var p Permission
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	})
	if err != nil {
		return nil, storeErr("list permissions", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

func (s *Service) handleListPerms(c fiber.Ctx) error {
	v, err := s.ListPermissions(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Permissions", v)
}

// Grant gives in.UserID in.Role on project id.
func (s *Service) Grant(ctx context.Context, id string, in GrantInput) (*Permission, error) {
	if _, err := platform.Caller(ctx); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := s.accountExists(ctx, "user_id", in.UserID); err != nil {
		return nil, err
	}
	now := s.now()
	perm := &Permission{ID: newID(), ProjectID: id, UserID: in.UserID, Role: in.Role, CreatedAt: now, UpdatedAt: now}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		p, err := getProject(tx, id)
		if err != nil {
			return err
		}
		if p == nil {
			return platform.NotFound("project", id)
		}
		if p.OwnerID == in.UserID {
			return platform.Invalid("user_id", "names the project's owner, who holds every right already")
		}
		if tx.GetRaw(bucketByMember, in.UserID+"/"+id) != nil {
			return platform.Errorf(platform.CodeConflict, "this user already has a permission on the project; change its role with PUT or PATCH")
		}
		if err := tx.Put(bucketPerms, id+"/"+perm.ID, perm); err != nil {
			return err
		}
		if err := tx.PutRaw(bucketByMember, in.UserID+"/"+id, []byte(perm.ID)); err != nil {
			return err
		}
		return s.event(tx, ctx, events.Event{EventType: "project.permission.granted", ResourceType: "project", ResourceID: id, ProjectID: id,
			Payload: events.Payload(map[string]any{"permission_id": perm.ID, "user_id": in.UserID, "role": in.Role})})
	})
	if err != nil {
		return nil, storeErr("grant the permission", err)
	}
	return perm, nil
}

func (s *Service) handleGrant(c fiber.Ctx) error {
	var in GrantInput
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	v, err := s.Grant(c.Context(), c.Params("id"), in)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusCreated, "Permission granted", v)
}

// getPermission is permission permID of project projectID (404 when none).
func getPermission(tx *store.Tx, projectID, permID string) (*Permission, error) {
	var p Permission
	ok, err := tx.Get(bucketPerms, projectID+"/"+permID, &p)
	if err == nil && !ok {
		err = platform.NotFound("permission", permID)
	}
	return &p, err
}

// SetRole changes permission permID of project id.
func (s *Service) SetRole(ctx context.Context, id, permID string, in RoleInput) (*Permission, error) {
	if err := validID("permissionId", permID); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var out Permission
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		p, err := getPermission(tx, id, permID)
		if err != nil {
			return err
		}
		if p.Role != in.Role {
			from := p.Role
			p.Role, p.UpdatedAt = in.Role, s.now()
			if err := tx.Put(bucketPerms, id+"/"+p.ID, p); err != nil {
				return err
			}
			if err := s.event(tx, ctx, events.Event{EventType: "project.permission.updated", ResourceType: "project", ResourceID: id, ProjectID: id,
				Payload: events.Payload(map[string]any{"permission_id": p.ID, "user_id": p.UserID, "from": from, "to": in.Role})}); err != nil {
				return err
			}
		}
		out = *p
		return nil
	})
	if err != nil {
		return nil, storeErr("update the permission", err)
	}
	return &out, nil
}

func (s *Service) handleSetRole(c fiber.Ctx) error {
	var in RoleInput
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	v, err := s.SetRole(c.Context(), c.Params("id"), c.Params("permissionId"), in)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Permission updated", v)
}

// Revoke removes permission permID of project id.
func (s *Service) Revoke(ctx context.Context, id, permID string) error {
	if err := validID("permissionId", permID); err != nil {
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
	return storeErr("revoke the permission", err)
}

func (s *Service) handleRevoke(c fiber.Ctx) error {
	if err := s.Revoke(c.Context(), c.Params("id"), c.Params("permissionId")); err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Permission revoked", nil)
}
