package identity

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/store"
)

func (s *Service) adminRoutes() []platform.Route {
	tag := []string{"admin"}
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/admin/users", Tags: tag, Handler: s.handleAdminCreate, Status: http.StatusCreated,
			Summary: "Create a user (admin role required, else 403)",
			Description: "`password` follows the login rule (at least 8 characters with an uppercase letter, a lowercase letter and a digit). " +
				"`username` defaults to one derived from the email; `role` is `user` (default) or `admin`; `verified` (default false) " +
				"marks the email verified so the user can log in at once; an unverified user gets a verification mail. Writes `user.created`. " + emailRule,
			Body: adminCreateReq{}, Response: User{}},
		{Method: http.MethodGet, Path: "/api/v1/admin/users", Tags: tag, Handler: s.handleAdminList,
			Summary: "List users, oldest first (admin role required)", Response: []User{}},
		{Method: http.MethodGet, Path: "/api/v1/admin/users/{id}", Tags: tag, Handler: s.handleAdminGet,
			Summary: "One user (admin role required)", Response: User{}},
		{Method: http.MethodPatch, Path: "/api/v1/admin/users/{id}", Tags: tag, Handler: s.handleAdminPatch,
			Summary: "Change a user's role or ban state (admin role required)",
			Description: "Writes `user.role_changed`, `user.banned` or `user.unbanned`. A banned user's sessions and auth tokens stop working at once " +
				"(403). An admin cannot ban or demote themselves.",
			Body: adminPatchReq{}, Response: User{}},
	}
}

type adminCreateReq struct {
	Email    string `json:"email" required:"true"`
	Username string `json:"username,omitempty"`
	Password string `json:"password" required:"true"`
	Role     string `json:"role,omitempty" enum:"user,admin"`
	Verified bool   `json:"verified,omitempty"`
}

func checkRole(r string) error {
	if r != RoleUser && r != RoleAdmin {
		return platform.Invalid("role", "must be user or admin")
	}
	return nil
}

func (r *adminCreateReq) Validate() error {
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

type adminPatchReq struct {
	Role     *string `json:"role,omitempty" enum:"user,admin"`
	IsBanned *bool   `json:"is_banned,omitempty"`
}

func (r *adminPatchReq) Validate() error {
	if r.Role == nil && r.IsBanned == nil {
		return platform.Invalid("body", "give role or is_banned")
	}
	if r.Role != nil {
		return checkRole(*r.Role)
	}
	return nil
}

func (s *Service) handleAdminCreate(c fiber.Ctx) error {
	p, err := s.requireAdmin(c)
	if err != nil {
		return err
	}
	var req adminCreateReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	region, _ := s.pickRegion("")
	var view User
	var verifyTok string
	err = s.update(func(tx *store.Tx) error {
		u, err := s.createUser(tx, newUser{Email: req.Email, Username: req.Username, Password: req.Password, Role: req.Role,
			Verified: req.Verified, Region: region, ActorID: p.UserID, IP: platform.ClientIP(c), Source: "admin"})
		if err != nil {
			return err
		}
		if !req.Verified {
			if verifyTok, err = s.issueOnce(tx, onceRec{Kind: onceVerify, UserID: u.ID}); err != nil {
				return err
			}
		}
		view = u.view()
		return nil
	})
	if err != nil {
		return storeErr("create the user", err)
	}
	if verifyTok != "" {
		if err := s.sendMail(c.Context(), s.verificationMail(view.Email, verifyTok)); err != nil {
			s.log.Error("verification mail failed", "user", view.ID, "err", err)
		}
	}
	return platform.Respond(c, http.StatusCreated, "User created", view)
}

func (s *Service) handleAdminList(c fiber.Ctx) error {
	if _, err := s.requireAdmin(c); err != nil {
		return err
	}
	out := []User{}
	err := s.db.View(func(tx *store.Tx) error {
		return tx.ForEach(bucketUsers, func(_ string, raw []byte) error {
			var u userRec
			if err := json.Unmarshal(raw, &u); err != nil {
				return err
			}
			out = append(out, u.view())
			return nil
		})
	})
	if err != nil {
		return platform.Internal("list users", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return platform.Respond(c, http.StatusOK, "Users", out)
}

func (s *Service) handleAdminGet(c fiber.Ctx) error {
	if _, err := s.requireAdmin(c); err != nil {
		return err
	}
	var view User
	err := s.db.View(func(tx *store.Tx) error {
		u, err := getUser(tx, c.Params("id"))
		if err != nil {
			return err
		}
		if u == nil {
			return platform.NotFound("user", c.Params("id"))
		}
		view = u.view()
		return nil
	})
	if err != nil {
		return storeErr("read the user", err)
	}
	return platform.Respond(c, http.StatusOK, "User", view)
}

func (s *Service) handleAdminPatch(c fiber.Ctx) error {
	p, err := s.requireAdmin(c)
	if err != nil {
		return err
	}
	var req adminPatchReq
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	id := c.Params("id")
	if id == p.UserID && ((req.IsBanned != nil && *req.IsBanned) || (req.Role != nil && *req.Role != RoleAdmin)) {
		return platform.Errorf(platform.CodeBadRequest, "an admin cannot ban or demote themselves")
	}
	var view User
	err = s.update(func(tx *store.Tx) error {
		u, err := getUser(tx, id)
		if err != nil {
			return err
		}
		if u == nil {
			return platform.NotFound("user", id)
		}
		now := s.now()
		ev := func(typ string, payload map[string]any) error {
			_, err := events.Append(tx, now, events.Event{EventType: typ, ResourceType: "user", ResourceID: u.ID,
				ActorID: p.UserID, IP: platform.ClientIP(c), Payload: events.Payload(payload)})
			return err
		}
		changed := false
		if req.Role != nil && *req.Role != u.Role {
			if err := ev("user.role_changed", map[string]any{"from": u.Role, "to": *req.Role}); err != nil {
				return err
			}
			u.Role, changed = *req.Role, true
		}
		if req.IsBanned != nil && *req.IsBanned != u.IsBanned {
			typ := "user.unbanned"
			if *req.IsBanned {
				typ = "user.banned"
			}
			if err := ev(typ, map[string]any{"username": u.Username}); err != nil {
				return err
			}
			u.IsBanned, changed = *req.IsBanned, true
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
		return storeErr("update the user", err)
	}
	return platform.Respond(c, http.StatusOK, "User updated", view)
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
		return false, platform.Invalid("admin-password", loginRule)
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
