// Package console owns the web console deckhand-control serves at /: the
// single-page app (web/, built by Vite into dist/ and embedded), the
// headers its pages go out with (a strict Content-Security-Policy, never
// framed), and the cookie session it signs in with. The console calls the
// same API as every other client; its session lives in HttpOnly,
// SameSite=Strict cookies that page scripts never see, and a cookie
// credential is honoured only for same-origin requests and, on every
// state-changing call, only with the session's CSRF token in X-CSRF-Token.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/domain"
	"deckhand/control/identity"
	"deckhand/platform"
	"deckhand/platform/auth"
)

// Cookie and header names of the console session.
const (
	// SessionCookie holds the session's access token (Path=/).
	SessionCookie = "deckhand_session"
	// RefreshCookie holds its refresh token, sent only to the session routes.
	RefreshCookie = "deckhand_refresh"
	// CSRFHeader carries the session's CSRF token on state-changing calls.
	CSRFHeader = "X-CSRF-Token"
	// SessionPath is the base of the console's session routes.
	SessionPath = "/api/v1/console/session"
)

// Identity is what the console needs of the identity domain: its login
// steps and the resolution of a session credential.
type Identity interface {
	Login(context.Context, identity.LoginInput) (*identity.LoginAnswer, error)
	VerifyTwoFactor(context.Context, identity.Verify2FARequest) (*identity.LoginResult, error)
	Refresh(context.Context, identity.RefreshRequest) (*identity.LoginResult, error)
	Logout(context.Context, struct{}) error
	Me(context.Context) (*identity.User, error)
	Resolve(credential, ip string) (*auth.Principal, error)
	Routes() []platform.Route
}

// Config is the console's section of the server's flags.
type Config struct {
	Identity Identity
	// PublicURL is the control plane's public base: https there makes the
	// cookies Secure even behind a TLS-terminating proxy.
	PublicURL string
}

// Service is the console domain.
type Service struct {
	id     Identity
	secure bool
	clock  platform.Clock
	index  *asset
	files  map[string]*asset
	pages  pageSet
	limits map[string][]platform.RateLimit // identity's per-IP limits of the routes the session routes stand for
}

// New builds the console from the embedded build and identity.
func New(env domain.Env[Config]) (*Service, error) {
	if env.Config.Identity == nil {
		return nil, errors.New("console: the identity domain is required")
	}
	s := &Service{id: env.Config.Identity, clock: env.Clock, secure: strings.HasPrefix(env.Config.PublicURL, "https://"),
		limits: map[string][]platform.RateLimit{}}
	if s.clock == nil {
		s.clock = platform.SystemClock{}
	}
	var err error
	if s.pages, err = loadPages(); err != nil {
		return nil, err
	}
	if s.index, s.files, err = loadAssets(); err != nil {
		return nil, err
	}
	// The session routes are identity's login steps in another wrapping:
	// they spend the same per-IP budgets (same limit names, same store keys).
	for _, r := range s.id.Routes() {
		for _, l := range r.Limits {
			if l.By == platform.ByIP {
				s.limits[r.Path] = append(s.limits[r.Path], l)
			}
		}
	}
	return s, nil
}

// Session is the console's view of its signed-in session.
type Session struct {
	User      *identity.User `json:"user"`
	CSRFToken string         `json:"csrf_token"`
	ExpiresAt string         `json:"expires_at,omitempty"`
}

// LoginStep answers a console login: the session, or the two-factor step.
type LoginStep struct {
	Session
	Requires2FA bool   `json:"requires_2fa,omitempty"`
	TempToken   string `json:"temp_token,omitempty"`
}

// Routes is the console's session API.
func (s *Service) Routes() []platform.Route {
	tag := []string{"console"}
	return []platform.Route{
		{Method: http.MethodPost, Path: SessionPath, Policy: platform.Public, Tags: tag, Handler: s.handleLogin,
			Limits:  s.limits["/api/v1/users/auth/login"],
			Summary: "Console login: POST /api/v1/users/auth/login whose session goes into cookies",
			Description: "Takes the login body (`email` or `username`, `password`). Answers `requires_2fa` and a `temp_token` for " +
				SessionPath + "/2fa, or sets the session: `" + SessionCookie + "` (the access token, Path=/) and `" + RefreshCookie +
				"` (the refresh token, Path=" + SessionPath + "), both HttpOnly and SameSite=Strict, Secure over https, and answers " +
				"the user and the session's `csrf_token`, which every state-changing call authenticated by the cookie must send in " +
				CSRFHeader + ". A cookie credential counts only for same-origin requests (Sec-Fetch-Site and Origin). Refused (403) " +
				"from another origin.",
			Body: identity.LoginInput{}, Response: LoginStep{}},
		{Method: http.MethodPost, Path: SessionPath + "/2fa", Policy: platform.Public, Tags: tag, Handler: s.handle2FA,
			Limits:  s.limits["/api/v1/users/auth/2fa/verify"],
			Summary: "Console login, two-factor step: a temp_token and a TOTP or backup code set the session cookies",
			Body:    identity.Verify2FAInput{}, Response: Session{}},
		{Method: http.MethodGet, Path: SessionPath, Policy: platform.SignedIn, Tags: tag, Handler: s.handleGet,
			Summary:     "The console session: the user and the session's CSRF token",
			Description: "Read with the session cookie; a Bearer credential has no CSRF token (it needs none).",
			Response:    Session{}},
		{Method: http.MethodPost, Path: SessionPath + "/refresh", Policy: platform.Public, Tags: tag, Handler: s.handleRefresh,
			Limits:  s.limits["/api/v1/users/auth/refresh"],
			Summary: "Rotate the console session's tokens from its refresh cookie (same origin only)", Response: Session{}},
		{Method: http.MethodDelete, Path: SessionPath, Policy: platform.Public, Tags: tag, Handler: s.handleLogout,
			Summary:     "Console logout: ends the session and clears its cookies",
			Description: "Ends the session of a valid cookie (same origin, with its CSRF token); the cookies are cleared in any case."},
	}
}

// CSRFToken is the CSRF token of a session access token: a MAC keyed by
// the token itself, which no other page can read (HttpOnly), so nobody
// without the cookie's value can make it, and every server replica
// derives the same one without shared state.
func CSRFToken(access string) string {
	m := hmac.New(sha256.New, []byte(access))
	m.Write([]byte("deckhand console csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var (
	errCrossOrigin = platform.Errorf(platform.CodeForbidden, "the console session answers only its own origin")
	errCSRF        = platform.Errorf(platform.CodeForbidden, "a state-changing call with the console session cookie needs its CSRF token in "+CSRFHeader)
	errNoSession   = platform.Errorf(platform.CodeUnauthorized, "no console session: log in again")
)

// sameOrigin reports whether a request with cookies comes from the
// console's own pages: Sec-Fetch-Site, where the browser sends it, must be
// same-origin (or none: typed in, a bookmark), and an Origin header must
// name this host.
func sameOrigin(c fiber.Ctx) bool {
	switch c.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	o := c.Get(fiber.HeaderOrigin)
	if o == "" {
		return true
	}
	return strings.EqualFold(o, c.Scheme()+"://"+c.Host())
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Authenticator wraps the identity domain's authenticator: a request
// without an Authorization header may use the session cookie, from this
// origin only, and with the session's CSRF token unless its method is safe.
func (s *Service) Authenticator(inner platform.Authenticator) platform.Authenticator {
	return platform.AuthenticatorFunc(func(c fiber.Ctx) (*auth.Principal, error) {
		tok := c.Cookies(SessionCookie)
		if tok == "" || len(c.Request().Header.Peek(fiber.HeaderAuthorization)) > 0 {
			return inner.Authenticate(c)
		}
		if strings.HasPrefix(tok, identity.TokenPrefix) {
			return nil, errNoSession // the cookie holds sessions, never auth tokens
		}
		if !sameOrigin(c) {
			return nil, errCrossOrigin
		}
		if !safeMethod(c.Method()) {
			sent := c.Get(CSRFHeader)
			if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(CSRFToken(tok))) != 1 {
				return nil, errCSRF
			}
		}
		return s.id.Resolve(tok, platform.ClientIP(c))
	})
}

func (s *Service) setCookies(c fiber.Ctx, res *identity.LoginResult) {
	exp, err := time.Parse(time.RFC3339, res.ExpiresAt)
	if err != nil {
		exp = s.clock.Now().Add(24 * time.Hour)
	}
	secure := s.secure || c.Scheme() == "https"
	c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: res.Token, Path: "/", Expires: exp,
		HTTPOnly: true, Secure: secure, SameSite: fiber.CookieSameSiteStrictMode})
	c.Cookie(&fiber.Cookie{Name: RefreshCookie, Value: res.RefreshToken, Path: SessionPath, MaxAge: int((7 * 24 * time.Hour).Seconds()),
		HTTPOnly: true, Secure: secure, SameSite: fiber.CookieSameSiteStrictMode})
}

func (s *Service) clearCookies(c fiber.Ctx) {
	secure := s.secure || c.Scheme() == "https"
	for name, p := range map[string]string{SessionCookie: "/", RefreshCookie: SessionPath} {
		c.Cookie(&fiber.Cookie{Name: name, Value: "", Path: p, MaxAge: -1, Expires: time.Unix(1, 0),
			HTTPOnly: true, Secure: secure, SameSite: fiber.CookieSameSiteStrictMode})
	}
}

// started answers a login result as the console's: cookies and the CSRF
// token, never the tokens themselves.
func (s *Service) started(c fiber.Ctx, res *identity.LoginResult) error {
	if res.Requires2FA {
		return platform.Respond(c, http.StatusOK, "Two-factor code required", LoginStep{Requires2FA: true, TempToken: res.TempToken})
	}
	if res.Token == "" {
		return platform.Internal("start the console session", errors.New("login answered no session"))
	}
	s.setCookies(c, res)
	return platform.Respond(c, http.StatusOK, "Login successful",
		LoginStep{Session: Session{User: res.User, CSRFToken: CSRFToken(res.Token), ExpiresAt: res.ExpiresAt}})
}

func (s *Service) handleLogin(c fiber.Ctx) error {
	if !sameOrigin(c) {
		return errCrossOrigin
	}
	var in identity.LoginInput
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	if in.ResponseMode != "" && in.ResponseMode != "tokens" {
		return platform.Invalid("response_mode", "the console session takes tokens mode only")
	}
	res, err := s.id.Login(c.Context(), in)
	if err != nil {
		return err
	}
	return s.started(c, res.Body)
}

// twoFactorInput is the body of the two-factor step.
type twoFactorInput struct {
	TempToken string `json:"temp_token" required:"true"`
	Code      string `json:"code" required:"true"`
}

func (s *Service) handle2FA(c fiber.Ctx) error {
	if !sameOrigin(c) {
		return errCrossOrigin
	}
	var in twoFactorInput
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	res, err := s.id.VerifyTwoFactor(c.Context(), identity.Verify2FARequest{Body: identity.Verify2FAInput{TempToken: in.TempToken, Code: in.Code}})
	if err != nil {
		return err
	}
	return s.started(c, res)
}

func (s *Service) handleGet(c fiber.Ctx) error {
	u, err := s.id.Me(c.Context())
	if err != nil {
		return err
	}
	out := Session{User: u}
	if tok := c.Cookies(SessionCookie); tok != "" && len(c.Request().Header.Peek(fiber.HeaderAuthorization)) == 0 {
		out.CSRFToken = CSRFToken(tok)
	}
	return platform.Respond(c, http.StatusOK, "Console session", out)
}

// handleRefresh needs no CSRF token (the access token it derives from may
// have expired): a cross-origin page cannot send it anyway (same-origin
// check), and a rotation gives the caller nothing to read.
func (s *Service) handleRefresh(c fiber.Ctx) error {
	if !sameOrigin(c) {
		return errCrossOrigin
	}
	rt := c.Cookies(RefreshCookie)
	if rt == "" {
		return errNoSession
	}
	res, err := s.id.Refresh(c.Context(), identity.RefreshRequest{Bearer: identity.Bearer{Authorization: "Bearer " + rt}, Body: identity.RefreshInput{RefreshToken: rt}})
	if err != nil {
		var pe *platform.Error
		if errors.As(err, &pe) && pe.Code == platform.CodeUnauthorized {
			s.clearCookies(c)
		}
		return err
	}
	return s.started(c, res)
}

func (s *Service) handleLogout(c fiber.Ctx) error {
	if !sameOrigin(c) {
		return errCrossOrigin
	}
	tok := c.Cookies(SessionCookie)
	if tok != "" {
		sent := c.Get(CSRFHeader)
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(CSRFToken(tok))) != 1 {
			return errCSRF
		}
		if p, err := s.id.Resolve(tok, platform.ClientIP(c)); err == nil && p.Kind == identity.KindSession {
			if err := s.id.Logout(auth.NewContext(c.Context(), p), struct{}{}); err != nil {
				return err
			}
		}
	}
	s.clearCookies(c)
	return platform.Respond(c, http.StatusOK, "Logged out", nil)
}
