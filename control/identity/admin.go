package identity

import (
	"context"
	"strings"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// UserRef names an account by its path id.
type UserRef struct {
	ID string `path:"id" doc:"a user id"`
}

// UserUpdate is PATCH /api/v1/admin/users/{id}.
type UserUpdate struct {
	UserRef
	Body AdminPatchInput
}

// AdminCreateInput is the body of POST /api/v1/admin/users.
type AdminCreateInput struct {
	Email    string `json:"email" required:"true"`
	Username string `json:"username,omitempty"`
	Password string `json:"password" required:"true"`
	Role     string `json:"role,omitempty" enum:"user,admin"`
	Verified bool   `json:"verified,omitempty"`
}

func checkRole(r string) error {
	if r != RoleUser && r != RoleAdmin {
		return fault.Invalid("role", "must be user or admin")
	}
	return nil
}

// Validate normalizes the email and checks username, password and role.
func (r *AdminCreateInput) Validate() error {
	e, err := normalizeEmail("email", r.Email)
	if err != nil {
		return err
	}
	r.Email = e
	if r.Username != "" {
		if err := validUsername("username", r.Username); err != nil {
			return err
		}
	}
	if err := checkAdminPassword(r.Password); err != nil {
		return err
	}
	if r.Role == "" {
		r.Role = RoleUser
	}
	return checkRole(r.Role)
}

// checkAdminPassword: accounts an operator creates need only pass the
// login rule, so they can always log in.
func checkAdminPassword(pw string) error {
	return checkLoginPassword(pw)
}

// AdminPatchInput is the body of PATCH /api/v1/admin/users/{id}.
type AdminPatchInput struct {
	Role     *string `json:"role,omitempty" enum:"user,admin"`
	IsBanned *bool   `json:"is_banned,omitempty"`
}

// Validate demands a change and a known role.
func (r *AdminPatchInput) Validate() error {
	if r.Role == nil && r.IsBanned == nil {
		return fault.Invalid("body", "give role or is_banned")
	}
	if r.Role != nil {
		return checkRole(*r.Role)
	}
	return nil
}

// CreateUser creates an account on an admin's behalf.
func (s *Service) CreateUser(ctx context.Context, in AdminCreateInput) (*User, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	region, _ := s.pickRegion("")
	var view User
	var verifyTok string
	err = s.update(func(tx *store.Tx) error {
		verifyTok = ""
		u, err := s.createUser(tx, newUser{Email: in.Email, Username: in.Username, Password: in.Password, Role: in.Role,
			Verified: in.Verified, Region: region, ActorID: p.UserID, IP: auth.ClientIP(ctx), Source: "admin"})
		if err != nil {
			return err
		}
		if !in.Verified {
			if verifyTok, err = s.issueOnce(tx, onceRec{Kind: onceVerify, UserID: u.ID}); err != nil {
				return err
			}
		}
		view = u.view()
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("create the user", err)
	}
	if verifyTok != "" {
		if err := s.sendMail(ctx, s.verificationMail(view.Email, verifyTok)); err != nil {
			s.log.Error("verification mail failed", "user", view.ID, "err", err)
		}
	}
	return &view, nil
}

// ListUsers lists every account, oldest first (admins only).
func (s *Service) ListUsers(ctx context.Context) ([]User, error) {
	if _, err := platform.AdminCaller(ctx); err != nil {
		return nil, err
	}
	out := []User{}
	err := s.db.View(func(tx *store.Tx) error {
		recs, _, err := store.All[userRec](tx, usersTable, store.Query{Sort: []string{"created_at"}})
		for i := range recs {
			out = append(out, recs[i].view())
		}
		return err
	})
	if err != nil {
		return nil, fault.Internal("list users", err)
	}
	return out, nil
}

// GetUser is one account (admins only).
func (s *Service) GetUser(ctx context.Context, ref UserRef) (*User, error) {
	id := ref.ID
	if _, err := platform.AdminCaller(ctx); err != nil {
		return nil, err
	}
	var view User
	err := s.db.View(func(tx *store.Tx) error {
		u, err := userOr(tx, id, fault.NotFound("user", id))
		if err != nil {
			return err
		}
		view = u.view()
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("read the user", err)
	}
	return &view, nil
}

// UpdateUser changes an account's role or ban state (admins only; never
// their own ban or demotion).
func (s *Service) UpdateUser(ctx context.Context, req UserUpdate) (*User, error) {
	id, in := req.ID, req.Body
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if id == p.UserID && ((in.IsBanned != nil && *in.IsBanned) || (in.Role != nil && *in.Role != RoleAdmin)) {
		return nil, fault.Errorf(fault.CodeBadRequest, "an admin cannot ban or demote themselves")
	}
	var view User
	err = s.update(func(tx *store.Tx) error {
		u, err := userOr(tx, id, fault.NotFound("user", id))
		if err != nil {
			return err
		}
		now := s.now()
		ev := func(typ string, payload map[string]any) error {
			_, err := events.Append(tx, now, events.Event{EventType: typ, ResourceType: "user", ResourceID: u.ID,
				ActorID: p.UserID, IP: auth.ClientIP(ctx), Payload: events.Payload(payload)})
			return err
		}
		changed := false
		if in.Role != nil && *in.Role != u.Role {
			if err := ev("user.role_changed", map[string]any{"from": u.Role, "to": *in.Role}); err != nil {
				return err
			}
			u.Role, changed = *in.Role, true
		}
		if in.IsBanned != nil && *in.IsBanned != u.IsBanned {
			typ := "user.unbanned"
			if *in.IsBanned {
				typ = "user.banned"
			}
			if err := ev(typ, map[string]any{"username": u.Username}); err != nil {
				return err
			}
			u.IsBanned, changed = *in.IsBanned, true
		}
		if changed {
			u.UpdatedAt = now
			if err := putUser(tx, u); err != nil {
				return err
			}
		}
		view = u.view()
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("update the user", err)
	}
	return &view, nil
}

// EnsureAdmin creates the bootstrap admin (--admin-email/--admin-password)
// as a verified admin when no account has that email; an existing account
// is left as it is. The password must pass the login rule.
func (s *Service) EnsureAdmin(email, password string) (bool, error) {
	e, err := normalizeEmail("admin-email", email)
	if err != nil {
		return false, err
	}
	if err := checkAdminPassword(password); err != nil {
		return false, fault.Invalid("admin-password", loginRule)
	}
	created := false
	err = s.update(func(tx *store.Tx) error {
		if tx.GetRaw(bucketEmails, e) != nil {
			return nil
		}
		region, _ := s.pickRegion("")
		username := ""
		if local := e[:strings.IndexByte(e, '@')]; usernameRe.MatchString(local) && tx.GetRaw(bucketNames, local) == nil {
			username = local
		}
		_, err := s.createUser(tx, newUser{Email: e, Username: username, Password: password, Role: RoleAdmin,
			Verified: true, Region: region, Source: "bootstrap"})
		created = err == nil
		return err
	})
	return created, err
}
