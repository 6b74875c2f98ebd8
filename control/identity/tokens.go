package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// TokenState is what the stored auth token and its view share.
type TokenState struct {
	IPWhitelist []string   `json:"ip_whitelist"`
	ExpiresAt   *time.Time `json:"expires_at"`
	IsEnabled   bool       `json:"is_enabled"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	LastUsedIP  *string    `json:"last_used_ip"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// tokenRec is a stored auth token; the secret itself is kept only as its
// lookup key.
type tokenRec struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	Alias  string `json:"alias"`
	Hash   string `json:"hash"`
	TokenState
}

// AuthToken is docs/spec/interface.md's auth token record.
type AuthToken struct {
	ID     string `json:"id"`
	Alias  string `json:"alias"`
	Prefix string `json:"prefix"`
	Token  string `json:"token,omitempty"`
	TokenState
}

func (s *Service) tokenView(t *tokenRec) AuthToken {
	v := AuthToken{ID: t.ID, Alias: t.Alias, Prefix: TokenPrefix, TokenState: t.TokenState}
	if v.IPWhitelist == nil {
		v.IPWhitelist = []string{}
	}
	if u, ok := s.usage.Load(t.ID); ok {
		mem := u.(*tokenUsage)
		if v.LastUsedAt == nil || mem.at.After(*v.LastUsedAt) {
			at, ip := mem.at, mem.ip
			v.LastUsedAt, v.LastUsedIP = &at, &ip
		}
	}
	return v
}

// TwoFactorHeader is the X-2FA-Code header the token gate asks for.
type TwoFactorHeader struct {
	Code string `header:"X-2FA-Code" doc:"a current TOTP or backup code, when the caller's two-factor token gate is on"`
}

// CreateTokenRequest is POST /api/v1/auth/tokens.
type CreateTokenRequest struct {
	TwoFactorHeader
	Body CreateTokenInput
}

// TokenRef names one of the caller's auth tokens.
type TokenRef struct {
	ID string `path:"id" doc:"an auth token id"`
}

// TokenUpdate is PATCH /api/v1/auth/tokens/{id}.
type TokenUpdate struct {
	TokenRef
	TwoFactorHeader
	Body UpdateTokenInput
}

// sessionOnly admits session tokens only, before the body is read: an
// auth token never mints or widens another.
func sessionOnly(why string) platform.Policy {
	return platform.Resource("credential.session", "a session token (an svc_ auth token gets 403)",
		func(ctx context.Context, _ func(string) string) error {
			p, err := platform.Caller(ctx)
			if err != nil {
				return err
			}
			if p.Kind != KindSession {
				return forbidden(why)
			}
			return nil
		})
}

var aliasRe = regexp.MustCompile(`^[A-Za-z0-9 _-]{1,254}$`)

func checkAlias(a string) error {
	if !aliasRe.MatchString(a) {
		return fault.Invalid("alias", "must be 1 to 254 characters: letters, digits, spaces, `_` and `-` only")
	}
	return nil
}

// normalizeIPs validates an allow-list of addresses or CIDR ranges.
func normalizeIPs(list []string) ([]string, error) {
	if len(list) > 100 {
		return nil, fault.Invalid("ip_whitelist", "must have at most 100 entries")
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		e = strings.TrimSpace(e)
		if p, err := netip.ParsePrefix(e); err == nil {
			out = append(out, p.Masked().String())
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil {
			return nil, fault.Invalid("ip_whitelist", "entry %d (%q) must be an IP address or CIDR range", i, e)
		}
		out = append(out, a.Unmap().String())
	}
	return out, nil
}

// ipAllowed: an empty list allows every address.
func ipAllowed(list []string, ip string) bool {
	if len(list) == 0 {
		return true
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, e := range list {
		if strings.Contains(e, "/") {
			if p, err := netip.ParsePrefix(e); err == nil && p.Contains(a) {
				return true
			}
		} else if b, err := netip.ParseAddr(e); err == nil && b == a {
			return true
		}
	}
	return false
}

// parseExpiry reads expires_at: ISO 8601 string, Unix seconds (number or
// digit string), "today" (next UTC midnight) or "tomorrow" (now + 24 h).
// JSON null is allowed only when allowNull (PATCH), and clears.
func parseExpiry(raw json.RawMessage, now time.Time, allowNull bool) (t *time.Time, clear bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false, nil
	}
	if string(raw) == "null" {
		if !allowNull {
			return nil, false, fault.Invalid("expires_at", "null is valid only in PATCH; omit the field for a token that never expires")
		}
		return nil, true, nil
	}
	bad := fault.Invalid("expires_at", "must be an ISO 8601 time, Unix seconds, `today` or `tomorrow`")
	var at time.Time
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false, bad
		}
		s = strings.TrimSpace(s)
		switch strings.ToLower(s) {
		case "today":
			y, m, d := now.UTC().Date()
			at = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
		case "tomorrow":
			at = now.Add(24 * time.Hour)
		default:
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				at = time.Unix(n, 0)
				break
			}
			var perr error = bad
			for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
				if v, err := time.Parse(layout, s); err == nil {
					at, perr = v, nil
					break
				}
			}
			if perr != nil {
				return nil, false, perr
			}
		}
	default:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return nil, false, bad
		}
		at = time.Unix(n, 0)
	}
	at = at.UTC()
	if !at.After(now) {
		return nil, false, fault.Invalid("expires_at", "must be in the future")
	}
	if at.Year() > 9999 {
		return nil, false, fault.Invalid("expires_at", "is too far in the future")
	}
	return &at, false, nil
}

// CreateTokenInput is the body of POST /api/v1/auth/tokens; Code is the
// X-2FA-Code header (needed under the token gate).
type CreateTokenInput struct {
	Alias       string          `json:"alias" required:"true"`
	IPWhitelist []string        `json:"ip_whitelist,omitempty"`
	ExpiresAt   json.RawMessage `json:"expires_at,omitempty" swaggertype:"string"`
	Code        string          `json:"-"`
}

// Validate checks the alias and the allow-list (expires_at needs the
// clock: CreateToken checks it).
func (r *CreateTokenInput) Validate() error {
	if err := checkAlias(r.Alias); err != nil {
		return err
	}
	ips, err := normalizeIPs(r.IPWhitelist)
	r.IPWhitelist = ips
	return err
}

// UpdateTokenInput is the body of PATCH /api/v1/auth/tokens/{id}; Code is
// the X-2FA-Code header.
type UpdateTokenInput struct {
	Alias       *string         `json:"alias,omitempty"`
	IsEnabled   *bool           `json:"is_enabled,omitempty"`
	IPWhitelist json.RawMessage `json:"ip_whitelist,omitempty"`
	ExpiresAt   json.RawMessage `json:"expires_at,omitempty"`
	Code        string          `json:"-"`
}

// Validate checks the alias when given.
func (r *UpdateTokenInput) Validate() error {
	if r.Alias != nil {
		return checkAlias(*r.Alias)
	}
	return nil
}

// CreateToken issues an svc_ auth token to the caller (a session, never
// another token); the secret is in the answer only.
func (s *Service) CreateToken(ctx context.Context, req CreateTokenRequest) (*AuthToken, error) {
	in := req.Body
	in.Code = req.Code
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if p.Kind != KindSession {
		return nil, forbidden("auth tokens are created with a session token, not with another auth token")
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	now := s.now()
	exp, _, err := parseExpiry(in.ExpiresAt, now, false)
	if err != nil {
		return nil, err
	}
	if err := s.checkTokenGate(ctx, p.UserID, in.Code); err != nil {
		return nil, err
	}
	secret := TokenPrefix + randomToken(32)
	t := &tokenRec{ID: uuid.NewString(), UserID: p.UserID, Alias: in.Alias, Hash: s.lookupKey(secret),
		TokenState: TokenState{IPWhitelist: in.IPWhitelist, ExpiresAt: exp, IsEnabled: true, CreatedAt: now, UpdatedAt: now}}
	err = s.update(func(tx *store.Tx) error {
		if err := tx.Put(bucketTokens, t.ID, t); err != nil {
			return err
		}
		if err := tx.PutRaw(bucketTokenHash, t.Hash, []byte(t.ID)); err != nil {
			return err
		}
		return s.tokenEvent(ctx, tx, p, "auth.token.created", t, nil)
	})
	if err != nil {
		return nil, fault.Wrap("create the auth token", err)
	}
	v := s.tokenView(t)
	v.Token = secret
	return &v, nil
}

func (s *Service) tokenEvent(ctx context.Context, tx *store.Tx, p *Principal, typ string, t *tokenRec, changed []string) error {
	payload := map[string]any{"alias": t.Alias}
	if changed != nil {
		payload["changed"] = changed
	}
	_, err := events.Append(tx, s.now(), events.Event{EventType: typ, ResourceType: "auth_token", ResourceID: t.ID,
		ActorID: p.UserID, IP: auth.ClientIP(ctx), Payload: events.Payload(payload)})
	return err
}

// ownToken loads a token the principal owns (404 otherwise, so ids of
// other users' tokens are not confirmed).
func ownToken(tx *store.Tx, p *Principal, id string) (*tokenRec, error) {
	var t tokenRec
	ok, err := tx.Get(bucketTokens, id, &t)
	if err != nil {
		return nil, err
	}
	if !ok || t.UserID != p.UserID {
		return nil, fault.NotFound("auth token", id)
	}
	return &t, nil
}

// ListTokens lists the caller's auth tokens, oldest first.
func (s *Service) ListTokens(ctx context.Context) ([]AuthToken, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var recs []tokenRec
	err = s.db.View(func(tx *store.Tx) error {
		var err error
		recs, _, err = store.All[tokenRec](tx, tokensTable, store.Query{
			Filters: []store.Filter{store.Where("user_id", store.Eq, p.UserID)}, Sort: []string{"created_at"}})
		return err
	})
	if err != nil {
		return nil, fault.Internal("list auth tokens", err)
	}
	out := make([]AuthToken, 0, len(recs))
	for i := range recs {
		out = append(out, s.tokenView(&recs[i]))
	}
	return out, nil
}

// onOwnToken runs fn on the caller's token id, in a write transaction when
// write is set.
func (s *Service) onOwnToken(ctx context.Context, id string, write bool, op string, fn func(tx *store.Tx, p *Principal, t *tokenRec) error) error {
	p, err := platform.Caller(ctx)
	if err != nil {
		return err
	}
	run := s.db.View
	if write {
		run = s.update
	}
	err = run(func(tx *store.Tx) error {
		t, err := ownToken(tx, p, id)
		if err != nil {
			return err
		}
		return fn(tx, p, t)
	})
	return fault.Wrap(op, err)
}

// GetToken is one of the caller's auth tokens (never the secret).
func (s *Service) GetToken(ctx context.Context, ref TokenRef) (*AuthToken, error) {
	id := ref.ID
	var v AuthToken
	err := s.onOwnToken(ctx, id, false, "read the auth token", func(_ *store.Tx, _ *Principal, t *tokenRec) error {
		v = s.tokenView(t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// UpdateToken changes one of the caller's auth tokens.
func (s *Service) UpdateToken(ctx context.Context, req TokenUpdate) (*AuthToken, error) {
	id, in := req.ID, req.Body
	in.Code = req.Code
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	now := s.now()
	exp, clearExp, err := parseExpiry(in.ExpiresAt, now, true)
	if err != nil {
		return nil, err
	}
	var ips []string
	setIPs := len(bytes.TrimSpace(in.IPWhitelist)) > 0
	if setIPs && string(bytes.TrimSpace(in.IPWhitelist)) != "null" {
		var list []string
		if err := json.Unmarshal(in.IPWhitelist, &list); err != nil {
			return nil, fault.Invalid("ip_whitelist", "must be an array of strings or null")
		}
		if ips, err = normalizeIPs(list); err != nil {
			return nil, err
		}
	}
	// ip_whitelist, expires_at and is_enabled decide where, until when and
	// whether a token works: only the user's session may change them (an
	// svc_ token could otherwise lift its own limits or revive a disabled
	// sibling), and under the token gate only with a current second
	// factor, as for create. alias grants nothing and stays open to tokens.
	if in.IsEnabled != nil || setIPs || len(bytes.TrimSpace(in.ExpiresAt)) > 0 {
		if p.Kind != KindSession {
			return nil, forbidden("ip_whitelist, expires_at and is_enabled are changed with a session token, not with an auth token")
		}
		// An unknown id is 404 before the gate spends the caller's code.
		err := s.db.View(func(tx *store.Tx) error {
			_, err := ownToken(tx, p, id)
			return err
		})
		if err != nil {
			return nil, fault.Wrap("read the auth token", err)
		}
		if err := s.checkTokenGate(ctx, p.UserID, in.Code); err != nil {
			return nil, err
		}
	}
	var v AuthToken
	err = s.update(func(tx *store.Tx) error {
		t, err := ownToken(tx, p, id)
		if err != nil {
			return err
		}
		var changed []string
		if in.Alias != nil && *in.Alias != t.Alias {
			t.Alias = *in.Alias
			changed = append(changed, "alias")
		}
		if setIPs {
			t.IPWhitelist = ips
			changed = append(changed, "ip_whitelist")
		}
		if exp != nil || clearExp {
			t.ExpiresAt = exp
			changed = append(changed, "expires_at")
		}
		toggled := ""
		if in.IsEnabled != nil && *in.IsEnabled != t.IsEnabled {
			t.IsEnabled = *in.IsEnabled
			toggled = "auth.token.disabled"
			if t.IsEnabled {
				toggled = "auth.token.enabled"
			}
		}
		if len(changed) == 0 && toggled == "" {
			v = s.tokenView(t)
			return nil
		}
		t.UpdatedAt = now
		if err := tx.Put(bucketTokens, t.ID, t); err != nil {
			return err
		}
		if len(changed) > 0 {
			if err := s.tokenEvent(ctx, tx, p, "auth.token.updated", t, changed); err != nil {
				return err
			}
		}
		if toggled != "" {
			if err := s.tokenEvent(ctx, tx, p, toggled, t, nil); err != nil {
				return err
			}
		}
		v = s.tokenView(t)
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("update the auth token", err)
	}
	return &v, nil
}

// DeleteToken revokes one of the caller's auth tokens for good.
func (s *Service) DeleteToken(ctx context.Context, ref TokenRef) error {
	id := ref.ID
	err := s.onOwnToken(ctx, id, true, "delete the auth token", func(tx *store.Tx, p *Principal, t *tokenRec) error {
		if err := tx.Delete(bucketTokens, t.ID); err != nil {
			return err
		}
		if err := tx.Delete(bucketTokenHash, t.Hash); err != nil {
			return err
		}
		return s.tokenEvent(ctx, tx, p, "auth.token.deleted", t, nil)
	})
	if err != nil {
		return err
	}
	s.usage.Delete(id)
	return nil
}
