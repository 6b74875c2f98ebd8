package projects

import (
	"context"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/store"
)

// Roles a permission grants, in increasing power; the owner is above all.
const (
	RoleViewer   = "viewer"   // read the project, its containers and documents
	RoleOperator = "operator" // also act on containers (network, proxy permissions)
	RoleManager  = "manager"  // also change the project, its permissions and its document
)

type level int

const (
	roleNone level = iota
	roleViewer
	roleOperator
	roleManager
	roleOwner
)

func levelOf(role string) level {
	switch role {
	case RoleViewer:
		return roleViewer
	case RoleOperator:
		return roleOperator
	case RoleManager:
		return roleManager
	}
	return roleNone
}

var (
	errNoProjectAccess   = &platform.Error{Code: platform.CodeForbidden, Message: "you do not have access to this project"}
	errNoContainerAccess = &platform.Error{Code: platform.CodeForbidden, Message: "you do not have access to this container"}
)

// callerLevel is what userID may do on project p (read in tx).
func callerLevel(tx *store.Tx, p *Project, userID string) (level, error) {
	if p.OwnerID == userID {
		return roleOwner, nil
	}
	raw := tx.GetRaw(bucketByMember, userID+"/"+p.ID)
	if raw == nil {
		return roleNone, nil
	}
	var perm Permission
	ok, err := tx.Get(bucketPerms, p.ID+"/"+string(raw), &perm)
	if err != nil || !ok {
		return roleNone, err
	}
	return levelOf(perm.Role), nil
}

// checkProject admits callers with at least need on the project of path
// parameter id: 400 malformed id, 404 unknown, 403 not enough.
func (s *Service) checkProject(need level) platform.Check {
	return func(ctx context.Context, param func(string) string) error {
		id := param("id")
		if err := validID("id", id); err != nil {
			return err
		}
		p, ok := auth.FromContext(ctx)
		if !ok {
			return platform.Errorf(platform.CodeUnauthorized, "missing credential")
		}
		return storeErr("check project access", s.db.ViewContext(ctx, func(tx *store.Tx) error {
			proj, err := getProject(tx, id)
			if err != nil {
				return err
			}
			if proj == nil {
				return platform.NotFound("project", id)
			}
			lv, err := callerLevel(tx, proj, p.UserID)
			if err != nil {
				return err
			}
			if lv < need {
				return errNoProjectAccess
			}
			return nil
		}))
	}
}

// checkContainer admits callers with at least need on the project of the
// container of path parameter id.
func (s *Service) checkContainer(need level) platform.Check {
	return func(ctx context.Context, param func(string) string) error {
		id := param("id")
		if err := validID("id", id); err != nil {
			return err
		}
		p, ok := auth.FromContext(ctx)
		if !ok {
			return platform.Errorf(platform.CodeUnauthorized, "missing credential")
		}
		return storeErr("check container access", s.db.ViewContext(ctx, func(tx *store.Tx) error {
			c, err := getContainer(tx, id)
			if err != nil {
				return err
			}
			if c == nil {
				return platform.NotFound("container", id)
			}
			proj, err := getProject(tx, c.ProjectID)
			if err != nil {
				return err
			}
			if proj == nil {
				return errNoContainerAccess
			}
			lv, err := callerLevel(tx, proj, p.UserID)
			if err != nil {
				return err
			}
			if lv < need {
				return errNoContainerAccess
			}
			return nil
		}))
	}
}
