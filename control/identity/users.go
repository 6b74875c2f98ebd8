package identity

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"deckhand/control/events"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// Roles.
const (
	RoleUser  = auth.RoleUser
	RoleAdmin = auth.RoleAdmin
)

// Profile is what the stored account and the client's view of it share.
type Profile struct {
	ID            string `json:"id"`
	Username      string `json:"username"`
	Alias         string `json:"alias"`
	Email         string `json:"email,omitempty"`
	Role          string `json:"role"`
	IsBanned      bool   `json:"is_banned"`
	EmailVerified bool   `json:"email_verified"`
	Region        string `json:"region,omitempty"`
}

// userRec is the stored account. Secrets in it are hashed (password,
// backup codes) or sealed (TOTP secret).
type userRec struct {
	Profile
	PasswordHash string    `json:"password_hash,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`

	TOTPSecret     string     `json:"totp_secret,omitempty"`      // sealed, active
	TOTPPending    string     `json:"totp_pending,omitempty"`     // sealed, during setup
	TOTPLastStep   int64      `json:"totp_last_step,omitempty"`   // replay guard
	BackupCodes    []string   `json:"backup_codes,omitempty"`     // lookup keys, unused ones
	TokenGate      bool       `json:"token_gate,omitempty"`       // creating svc_ tokens or changing their limits needs a code
	TwoFactorSince *time.Time `json:"two_factor_since,omitempty"` // when 2FA was enabled
}

// User is the account as clients see it.
type User struct {
	Profile
	TwoFactorEnabled bool      `json:"two_factor_enabled"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

func (u *userRec) view() User {
	return User{Profile: u.Profile, TwoFactorEnabled: u.TOTPSecret != "", CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

func getUser(tx *store.Tx, id string) (*userRec, error) {
	var u userRec
	ok, err := tx.Get(bucketUsers, id, &u)
	if err != nil || !ok {
		return nil, err
	}
	return &u, nil
}

// userOr is account id; missing when there is none.
func userOr(tx *store.Tx, id string, missing error) (*userRec, error) {
	u, err := getUser(tx, id)
	if err == nil && u == nil {
		return nil, missing
	}
	return u, err
}

// activeUser is userOr refusing a banned account.
func activeUser(tx *store.Tx, id string, missing error) (*userRec, error) {
	u, err := userOr(tx, id, missing)
	if err == nil && u.IsBanned {
		return nil, errBanned
	}
	return u, err
}

func userByIndex(tx *store.Tx, bucket, key string) (*userRec, error) {
	id := tx.GetRaw(bucket, strings.ToLower(key))
	if id == nil {
		return nil, nil
	}
	return getUser(tx, string(id))
}

func putUser(tx *store.Tx, u *userRec) error { return tx.Put(bucketUsers, u.ID, u) }

var usernameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{2,31}$`)

func validUsername(field, name string) error {
	if name == "" {
		return fault.Invalid(field, "is required")
	}
	if !usernameRe.MatchString(name) || strings.Contains(name, "@") {
		return fault.Invalid(field, "must be 3 to 32 characters: letters, digits, `_`, `-`, `.`, starting with a letter or digit")
	}
	return nil
}

// freeUsername derives an unused username from an email's local part.
func freeUsername(tx *store.Tx, email string) string {
	base := strings.ToLower(email[:strings.IndexByte(email, '@')])
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			b.WriteRune(r)
		}
	}
	name := strings.TrimLeft(b.String(), "_.-")
	if len(name) > 24 {
		name = name[:24]
	}
	for len(name) < 3 {
		name += "0"
	}
	cand := name
	for i := 0; tx.GetRaw(bucketNames, cand) != nil; i++ {
		cand = fmt.Sprintf("%s%d", name, 1000+i*7919%9000)
		if i > 50 {
			cand = name + randomToken(3)
		}
	}
	return cand
}

// newUser is everything createUser needs; the caller validated it.
type newUser struct {
	Email, Username, Password, Role, Region string
	Verified                                bool
	ActorID, IP                             string
	Source                                  string // signup, admin, bootstrap, oauth:<provider>
}

var errTaken = fault.Errorf(fault.CodeConflict, "an account with this email or username already exists")

// createUser inserts an account and its user.created event in tx.
func (s *Service) createUser(tx *store.Tx, n newUser) (*userRec, error) {
	now := s.now()
	if n.Email != "" && tx.GetRaw(bucketEmails, n.Email) != nil {
		return nil, errTaken
	}
	if n.Username == "" {
		if n.Email == "" {
			n.Username = "user" + randomToken(4)
		} else {
			n.Username = freeUsername(tx, n.Email)
		}
	} else if tx.GetRaw(bucketNames, strings.ToLower(n.Username)) != nil {
		return nil, errTaken
	}
	if n.Role == "" {
		n.Role = RoleUser
	}
	u := &userRec{Profile: Profile{ID: uuid.NewString(), Username: n.Username, Alias: n.Username, Email: n.Email,
		Role: n.Role, EmailVerified: n.Verified, Region: n.Region}, CreatedAt: now, UpdatedAt: now}
	if n.Password != "" {
		h, err := secrets.HashPassword(n.Password)
		if err != nil {
			return nil, fault.Internal("hash the password", err)
		}
		u.PasswordHash = h
	}
	if err := putUser(tx, u); err != nil {
		return nil, err
	}
	if u.Email != "" {
		if err := tx.PutRaw(bucketEmails, u.Email, []byte(u.ID)); err != nil {
			return nil, err
		}
	}
	if err := tx.PutRaw(bucketNames, strings.ToLower(u.Username), []byte(u.ID)); err != nil {
		return nil, err
	}
	_, err := events.Append(tx, now, events.Event{EventType: "user.created", ResourceType: "user", ResourceID: u.ID,
		ActorID: n.ActorID, IP: n.IP, Payload: events.Payload(map[string]any{"username": u.Username, "role": u.Role, "source": n.Source})})
	return u, err
}
