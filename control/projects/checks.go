package projects

import (
	"context"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
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
	errNoProjectAccess   = &fault.Error{Code: fault.CodeForbidden, Message: "you do not have access to this project"}
	errNoContainerAccess = &fault.Error{Code: fault.CodeForbidden, Message: "you do not have access to this container"}
)

// callerLevel is what userID may do on project p (read in tx).
func callerLevel(tx *store.Tx, p *Project, userID string) (level, error) {
	lv, err := callerLevels(tx, []Project{*p}, userID)
	if err != nil {
		return roleNone, err
	}
	return lv[0], nil
}

// callerLevels is callerLevel for each of ps, with one multi-get for the
// membership entries and one for their permissions.
func callerLevels(tx *store.Tx, ps []Project, userID string) ([]level, error) {
	out := make([]level, len(ps))
	var at []int // the projects userID does not own
	var memberKeys []string
	for i, p := range ps {
		if p.OwnerID == userID {
			out[i] = roleOwner
			continue
		}
		at = append(at, i)
		memberKeys = append(memberKeys, userID+"/"+p.ID)
	}
	if len(at) == 0 {
		return out, nil
	}
	permIDs, err := tx.GetRawMany(bucketByMember, memberKeys)
	if err != nil {
		return nil, err
	}
	var permAt []int
	var permKeys []string
	for j, raw := range permIDs {
		if raw != nil {
			permAt = append(permAt, at[j])
			permKeys = append(permKeys, ps[at[j]].ID+"/"+string(raw))
		}
	}
	if len(permKeys) == 0 {
		return out, nil
	}
	perms, err := store.GetMany[Permission](tx, bucketPerms, permKeys)
	if err != nil {
		return nil, err
	}
	for j, perm := range perms {
		if perm != nil {
			out[permAt[j]] = levelOf(perm.Role)
		}
	}
	return out, nil
}

// projectAt is project id for userID, who needs at least need: 404
// unknown, 403 not enough.
func projectAt(tx *store.Tx, id, userID string, need level) (*Project, level, error) {
	p, err := findProject(tx, id)
	if err != nil {
		return nil, roleNone, err
	}
	lv, err := callerLevel(tx, p, userID)
	if err == nil && lv < need {
		err = errNoProjectAccess
	}
	return p, lv, err
}

// checkProject admits callers with at least need on the project of path
// parameter id: 400 malformed id, 404 unknown, 403 not enough.
func (s *Service) checkProject(need level) platform.Check {
	return s.check(need, errNoProjectAccess, findProject)
}

// checkContainer admits callers with at least need on the project of the
// container of path parameter id.
//
// A container's agent token passes a read check (need viewer) of its own
// container, nothing else: the host lets it reach only routes that take
// agents.
func (s *Service) checkContainer(need level) platform.Check {
	people := s.check(need, errNoContainerAccess, func(tx *store.Tx, id string) (*Project, error) {
		c, err := findContainer(tx, id)
		if err != nil {
			return nil, err
		}
		p, err := getProject(tx, c.ProjectID)
		if err == nil && p == nil {
			err = errNoContainerAccess // a container outlived its project: nobody's
		}
		return p, err
	})
	return func(ctx context.Context, param func(string) string) error {
		if p, ok := auth.FromContext(ctx); ok && p.Kind == auth.KindAgent {
			if need > roleViewer {
				return errNoContainerAccess
			}
			return s.checkAgent(ctx, param)
		}
		return people(ctx, param)
	}
}

// check validates the id, finds the project it leads to (404 from
// projectOf) and compares the caller's level with need.
func (s *Service) check(need level, denied *fault.Error, projectOf func(tx *store.Tx, id string) (*Project, error)) platform.Check {
	return func(ctx context.Context, param func(string) string) error {
		id := param("id")
		if err := validID("id", id); err != nil {
			return err
		}
		caller, err := platform.Caller(ctx)
		if err != nil {
			return err
		}
		return fault.Wrap("check access", s.db.ViewContext(ctx, func(tx *store.Tx) error {
			p, err := projectOf(tx, id)
			if err != nil {
				return err
			}
			lv, err := callerLevel(tx, p, caller.UserID)
			if err != nil {
				return err
			}
			if lv < need {
				return denied
			}
			return nil
		}))
	}
}
