package identity

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Principal is who a request acts for; the host puts it in the request's
// context (auth.FromContext) once Authenticate has resolved it.
type Principal = auth.Principal

// Principal kinds and roles (package auth's).
const (
	KindSession = auth.KindSession
	KindToken   = auth.KindToken
)

// TokenPrefix starts every auth token.
const TokenPrefix = "svc_"

var (
	errNoCredential  = unauthorized("missing credential: send an Authorization: Bearer header")
	errBadCredential = unauthorized("invalid or expired credential")
	errBanned        = forbidden("this account is banned")
)

// bearer extracts the Bearer credential of c.
func bearer(c fiber.Ctx) (string, bool) { return platform.BearerToken(c) }

// Authenticate resolves the request's Bearer credential (a session access
// JWT or an svc_ auth token) into the Principal it acts for; the host calls
// it for every route whose policy needs a caller. It answers 401 for a
// missing, malformed, expired, revoked or disabled credential and for an
// auth token used from an address outside its allow-list, and 403 for a
// banned account.
func (s *Service) Authenticate(c fiber.Ctx) (*auth.Principal, error) {
	raw, ok := bearer(c)
	if !ok {
		return nil, errNoCredential
	}
	return s.Resolve(raw, platform.ClientIP(c))
}

// Resolve is Authenticate without HTTP: the principal a credential (session
// access JWT or svc_ token) acts for when presented from ip.
func (s *Service) Resolve(credential, ip string) (*auth.Principal, error) {
	if strings.HasPrefix(credential, TokenPrefix) {
		return s.authToken(credential, ip)
	}
	return s.authSession(credential)
}

func (s *Service) authSession(raw string) (*Principal, error) {
	now := s.now()
	if e := s.cache.get(raw); e != nil {
		if now.Before(e.expires) {
			p := e.p
			return &p, nil
		}
		return nil, errBadCredential
	}
	c, err := s.parseJWT(raw, typAccess)
	if err != nil {
		return nil, errBadCredential
	}
	version := s.cache.version.Load()
	var entry *credEntry
	err = s.db.View(func(tx *store.Tx) error {
		var sess sessionRec
		ok, err := tx.Get(bucketSessions, c.SID, &sess)
		if err != nil {
			return err
		}
		if !ok || sess.Revoked || sess.UserID != c.Subject {
			return errBadCredential
		}
		u, err := activeUser(tx, c.Subject, errBadCredential)
		if err != nil {
			return err
		}
		entry = &credEntry{version: version, user: u.view(), expires: c.ExpiresAt.Time,
			p: Principal{UserID: u.ID, Role: u.Role, Kind: KindSession, SessionID: sess.ID}}
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("check the session", err)
	}
	s.cache.put(raw, entry)
	s.profiles.put(entry.p.SessionID, entry)
	p := entry.p
	return &p, nil
}

// tokenUsage is the freshest last_used of an auth token; the store copy is
// refreshed when the address changes or the stored time is a minute old,
// so a busy token costs no write per request.
type tokenUsage struct {
	at    time.Time
	ip    string
	saved bool
}

const usagePersistEvery = time.Minute

func (s *Service) authToken(raw, ip string) (*Principal, error) {
	now := s.now()
	e := s.cache.get(raw)
	if e == nil {
		var err error
		if e, err = s.loadToken(raw); err != nil {
			return nil, err
		}
	}
	if !e.enabled {
		return nil, unauthorized("this auth token is disabled")
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		return nil, unauthorized("this auth token has expired")
	}
	if !ipAllowed(e.ips, ip) {
		return nil, unauthorized("this auth token is not allowed from this IP address")
	}
	if e.user.IsBanned {
		return nil, errBanned
	}
	tokID := e.p.TokenID
	saved := false
	// One request per token and minute (or new address) writes; the
	// others find the mark already moved and go on.
	if m := e.stored.Load(); m == nil || m.ip != ip || now.Sub(m.at) >= usagePersistEvery {
		next := &usageMark{at: now, ip: strings.Clone(ip)}
		if e.stored.CompareAndSwap(m, next) {
			if err := s.persistUsage(tokID, now, ip); err != nil {
				e.stored.CompareAndSwap(next, m)
				s.log.Warn("auth token usage not saved", "token", tokID, "err", err)
			} else {
				saved = true
			}
		}
	}
	s.usage.Store(tokID, &tokenUsage{at: now, ip: strings.Clone(ip), saved: saved})
	p := e.p
	return &p, nil
}

// loadToken reads an auth token and its owner into a cache entry.
func (s *Service) loadToken(raw string) (*credEntry, error) {
	key := s.lookupKey(raw)
	version := s.cache.version.Load()
	var e *credEntry
	err := s.db.View(func(tx *store.Tx) error {
		id := tx.GetRaw(bucketTokenHash, key)
		if id == nil {
			return errBadCredential
		}
		var t tokenRec
		ok, err := tx.Get(bucketTokens, string(id), &t)
		if err != nil {
			return err
		}
		if !ok || t.Hash != key {
			return errBadCredential
		}
		u, err := userOr(tx, t.UserID, errBadCredential)
		if err != nil {
			return err
		}
		e = &credEntry{version: version, user: u.view(), ips: t.IPWhitelist, enabled: t.IsEnabled,
			p: Principal{UserID: u.ID, Role: u.Role, Kind: KindToken, TokenID: t.ID}}
		if t.ExpiresAt != nil {
			e.expires = *t.ExpiresAt
		}
		if t.LastUsedAt != nil && t.LastUsedIP != nil {
			e.stored.Store(&usageMark{at: *t.LastUsedAt, ip: *t.LastUsedIP})
		}
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("check the auth token", err)
	}
	s.cache.put(raw, e)
	s.profiles.put(e.p.TokenID, e)
	return e, nil
}

// persistUsage writes an auth token's last_used_*. It is bookkeeping, not
// a credential change: it goes around update, so it neither drops any
// replica's credential cache nor waits for their acknowledgements (which
// stalled every request behind it once a minute under load). Nothing
// cached depends on it: a cached entry keeps its own mark in stored.
func (s *Service) persistUsage(id string, at time.Time, ip string) error {
	return s.db.Update(func(tx *store.Tx) error {
		var t tokenRec
		ok, err := tx.Get(bucketTokens, id, &t)
		if err != nil || !ok {
			return err
		}
		if t.LastUsedAt != nil && t.LastUsedAt.After(at) {
			return nil
		}
		t.LastUsedAt, t.LastUsedIP = &at, &ip
		return tx.Put(bucketTokens, id, &t)
	})
}

// flushUsage writes every in-memory last_used to the store (shutdown).
func (s *Service) flushUsage(_ context.Context) {
	s.usage.Range(func(k, v any) bool {
		if u := v.(*tokenUsage); !u.saved && s.persistUsage(k.(string), u.at, u.ip) == nil {
			s.usage.CompareAndSwap(k, u, &tokenUsage{at: u.at, ip: u.ip, saved: true})
		}
		return true
	})
}
