package identity

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Lifetimes of docs/spec/interface.md's Limits table, plus the refresh grace window:
// two tabs refreshing the same token within it both succeed.
const (
	accessTTL    = 24 * time.Hour
	refreshTTL   = 7 * 24 * time.Hour
	refreshGrace = 10 * time.Second
)

// sessionRec is one login: the family of every refresh token rotated from
// it. Refresh tokens are not stored at all: a token of generation n is the
// deterministic HS256 JWT over (session, n, issued-at), so only the current
// generation and its predecessor are accepted, and the current one can be
// re-minted byte-identically inside the grace window.
type sessionRec struct {
	ID        string    `json:"id"`
	UserID    string    `json:"user_id"`
	Method    string    `json:"method"` // password, oauth:codehost, ...
	Gen       uint64    `json:"gen"`
	GenIssued time.Time `json:"gen_issued"`
	RotatedAt time.Time `json:"rotated_at"` // when Gen-1 was rotated away
	Revoked   bool      `json:"revoked"`
	RevokedAt time.Time `json:"revoked_at,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	IP        string    `json:"ip,omitempty"`
}

type claims struct {
	jwt.RegisteredClaims
	Typ string `json:"typ"`
	SID string `json:"sid"`
	Gen uint64 `json:"gen,omitempty"`
}

const (
	typAccess  = "access"
	typRefresh = "refresh"
)

func (s *Service) sign(c *claims) (string, error) {
	c.Issuer = "deckhand"
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.jwtKey)
}

// parseJWT verifies signature, algorithm and expiry against the service
// clock and the expected token type.
func (s *Service) parseJWT(raw, typ string) (*claims, error) {
	var c claims
	p := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithLeeway(5*time.Second),
		jwt.WithTimeFunc(s.clock.Now), jwt.WithIssuer("deckhand"), jwt.WithExpirationRequired())
	if _, err := p.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return s.jwtKey, nil }); err != nil {
		return nil, err
	}
	if c.Typ != typ || c.SID == "" || c.Subject == "" {
		return nil, errors.New("wrong token type")
	}
	return &c, nil
}

func (s *Service) refreshJTI(sid string, gen uint64) string {
	m := hmac.New(sha256.New, s.macKey)
	m.Write([]byte("refresh\x00" + sid + "\x00" + strconv.FormatUint(gen, 10)))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func (s *Service) mintRefresh(sess *sessionRec) (string, error) {
	iat := sess.GenIssued.Truncate(time.Second)
	return s.sign(&claims{Typ: typRefresh, SID: sess.ID, Gen: sess.Gen, RegisteredClaims: jwt.RegisteredClaims{
		Subject: sess.UserID, ID: s.refreshJTI(sess.ID, sess.Gen),
		IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(iat.Add(refreshTTL))}})
}

func (s *Service) mintAccess(sess *sessionRec, now time.Time) (string, time.Time, error) {
	iat := now.Truncate(time.Second)
	exp := iat.Add(accessTTL)
	tok, err := s.sign(&claims{Typ: typAccess, SID: sess.ID, RegisteredClaims: jwt.RegisteredClaims{
		Subject: sess.UserID, ID: randomToken(12),
		IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp)}})
	return tok, exp, err
}

// LoginResult is docs/spec/interface.md's login result.
type LoginResult struct {
	Token           string `json:"token,omitempty"`
	RefreshToken    string `json:"refreshToken,omitempty"`
	ExpiresAt       string `json:"expires_at,omitempty"`
	User            *User  `json:"user,omitempty"`
	AuthIntentToken string `json:"auth_intent_token,omitempty"`
	// Two-factor step: login answers these instead of tokens.
	Requires2FA bool   `json:"requires_2fa,omitempty"`
	TempToken   string `json:"temp_token,omitempty"`
}

// startSession creates a session for u inside tx and returns its tokens.
func (s *Service) startSession(tx *store.Tx, u *userRec, method, ip string) (*LoginResult, error) {
	now := s.now()
	sess := &sessionRec{ID: uuid.NewString(), UserID: u.ID, Method: method, Gen: 1, GenIssued: now, CreatedAt: now, IP: ip}
	if err := tx.Put(bucketSessions, sess.ID, sess); err != nil {
		return nil, err
	}
	return s.tokensFor(sess, u, now)
}

func (s *Service) tokensFor(sess *sessionRec, u *userRec, now time.Time) (*LoginResult, error) {
	access, exp, err := s.mintAccess(sess, now)
	if err != nil {
		return nil, fault.Internal("sign the access token", err)
	}
	refresh, err := s.mintRefresh(sess)
	if err != nil {
		return nil, fault.Internal("sign the refresh token", err)
	}
	v := u.view()
	return &LoginResult{Token: access, RefreshToken: refresh, ExpiresAt: exp.Format(time.RFC3339), User: &v}, nil
}

var errBadRefresh = unauthorized("Invalid refresh token")

// refresh rotates the session the token belongs to. Replaying the
// generation just rotated away inside the grace window returns the current
// pair again (same refresh token bytes); any older replay revokes the whole
// family.
func (s *Service) refresh(ctx context.Context, raw string) (*LoginResult, error) {
	c, err := s.parseJWT(raw, typRefresh)
	if err != nil {
		return nil, errBadRefresh
	}
	if err := s.limiter.Allow(ctx, s.rules.refreshAccount.On(c.Subject)); err != nil {
		return nil, err
	}
	var res *LoginResult
	var reuse bool
	err = s.update(func(tx *store.Tx) error {
		var sess sessionRec
		ok, err := tx.Get(bucketSessions, c.SID, &sess)
		if err != nil {
			return err
		}
		if !ok || sess.Revoked || sess.UserID != c.Subject || !hmac.Equal([]byte(c.ID), []byte(s.refreshJTI(c.SID, c.Gen))) {
			return errBadRefresh
		}
		u, err := activeUser(tx, sess.UserID, errBadRefresh)
		if err != nil {
			return err
		}
		now := s.now()
		switch {
		case c.Gen == sess.Gen:
			sess.Gen++
			sess.GenIssued = now
			sess.RotatedAt = now
		case c.Gen+1 == sess.Gen && now.Sub(sess.RotatedAt) <= refreshGrace:
			// concurrent refresh from another tab: hand out the current pair
		default:
			sess.Revoked, sess.RevokedAt, sess.Reason = true, now, "refresh token reuse"
			reuse = true
			return tx.Put(bucketSessions, sess.ID, &sess)
		}
		if err := tx.Put(bucketSessions, sess.ID, &sess); err != nil {
			return err
		}
		res, err = s.tokensFor(&sess, u, now)
		return err
	})
	if reuse {
		s.log.Warn("refresh token reuse detected; session revoked", "session", c.SID, "user", c.Subject)
		return nil, unauthorized("Invalid refresh token: it was already used, so the session has been revoked")
	}
	if err != nil {
		return nil, fault.Wrap("refresh the session", err)
	}
	return res, nil
}

// revokeSession ends one session (logout).
func (s *Service) revokeSession(sid, reason string) error {
	return s.update(func(tx *store.Tx) error {
		var sess sessionRec
		ok, err := tx.Get(bucketSessions, sid, &sess)
		if err != nil || !ok || sess.Revoked {
			return err
		}
		sess.Revoked, sess.RevokedAt, sess.Reason = true, s.now(), reason
		return tx.Put(bucketSessions, sid, &sess)
	})
}

// revokeUserSessions ends every session of a user inside tx (password
// reset).
func (s *Service) revokeUserSessions(tx *store.Tx, userID, reason string) error {
	now := s.now()
	var todo []sessionRec
	err := tx.ForEach(bucketSessions, func(_ string, raw []byte) error {
		var sess sessionRec
		if err := json.Unmarshal(raw, &sess); err != nil {
			return err
		}
		if sess.UserID == userID && !sess.Revoked {
			todo = append(todo, sess)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range todo {
		todo[i].Revoked, todo[i].RevokedAt, todo[i].Reason = true, now, reason
		if err := tx.Put(bucketSessions, todo[i].ID, &todo[i]); err != nil {
			return err
		}
	}
	return nil
}
