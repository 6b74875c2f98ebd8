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
	"cmp"
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
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"
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
	clock  clockpkg.Clock
	index  *asset
	files  map[string]*asset
	pages  pageSet
	limits map[string][]ratelimit.RateLimit // identity's per-IP limits of the routes the session routes stand for
}

// New builds the console from the embedded build and identity.
func New(env domain.Env[Config]) (*Service, error) {
	if env.Config.Identity == nil {
		return nil, errors.New("console: the identity domain is required")
	}
	s := &Service{id: env.Config.Identity, clock: cmp.Or[clockpkg.Clock](env.Clock, clockpkg.SystemClock{}),
		secure: strings.HasPrefix(env.Config.PublicURL, "https://"), limits: map[string][]ratelimit.RateLimit{}}
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
			if l.By == ratelimit.ByIP {
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
		{Method: http.MethodPost, Path: SessionPath, OperationID: "consoleLogin", Policy: platform.Public, Tags: tag,
			Limits:  s.limits["/api/v1/users/auth/login"],
			Summary: "Console login: POST /api/v1/users/auth/login whose session goes into cookies",
			Description: "Takes the login body (`email` or `username`, `password`). Answers `requires_2fa` and a `temp_token` for " +
				SessionPath + "/2fa (message `" + msgTwoFactor + "`), or sets the session: `" + SessionCookie + "` (the access token, Path=/) and `" + RefreshCookie +
				"` (the refresh token, Path=" + SessionPath + "), both HttpOnly and SameSite=Strict, Secure over https, and answers " +
				"the user and the session's `csrf_token`, which every state-changing call authenticated by the cookie must send in " +
				CSRFHeader + ". A cookie credential counts only for same-origin requests (Sec-Fetch-Site and Origin). Refused (403) " +
				"from another origin, before the body is read.",
			Message: msgLoggedIn, Op: platform.Op(s.Login)},
		{Method: http.MethodPost, Path: SessionPath + "/2fa", OperationID: "consoleVerify2FA", Policy: platform.Public, Tags: tag,
			Limits:  s.limits["/api/v1/users/auth/2fa/verify"],
			Summary: "Console login, two-factor step: a temp_token and a TOTP or backup code set the session cookies",
			Message: msgLoggedIn, Op: platform.Op(s.VerifyTwoFactor)},
		{Method: http.MethodGet, Path: SessionPath, OperationID: "getConsoleSession", Policy: platform.SignedIn, Tags: tag,
			Summary:     "The console session: the user and the session's CSRF token",
			Description: "Read with the session cookie; a Bearer credential has no CSRF token (it needs none).",
			Message:     "Console session", Op: platform.Op(s.Session)},
		{Method: http.MethodPost, Path: SessionPath + "/refresh", OperationID: "refreshConsoleSession", Policy: platform.Public, Tags: tag,
			Limits:      s.limits["/api/v1/users/auth/refresh"],
			Summary:     "Rotate the console session's tokens from its refresh cookie (same origin only)",
			Description: "A refused refresh token (401) clears both cookies.",
			Message:     msgLoggedIn, Op: platform.Op(s.Refresh)},
		{Method: http.MethodDelete, Path: SessionPath, OperationID: "consoleLogout", Policy: platform.Public, Tags: tag,
			Summary:     "Console logout: ends the session and clears its cookies",
			Description: "Ends the session of a valid cookie (same origin, with its CSRF token); the cookies are cleared in any case.",
			Message:     "Logged out", Op: platform.Op(s.Logout)},
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
	errCrossOrigin = fault.Errorf(fault.CodeForbidden, "the console session answers only its own origin")
	errCSRF        = fault.Errorf(fault.CodeForbidden, "a state-changing call with the console session cookie needs its CSRF token in "+CSRFHeader)
	errNoSession   = fault.Errorf(fault.CodeUnauthorized, "no console session: log in again")
	errTwoSessions = fault.Errorf(fault.CodeUnauthorized, "the request carries more than one "+SessionCookie+
		" cookie (a page on another port of this host can plant one), so none is used: clear this site's cookies and log in again")
)

// RequestOrigin is where a request to the session routes comes from:
// the same-origin check reads it before the body (ValidateParams).
type RequestOrigin struct {
	FetchSite string `header:"Sec-Fetch-Site" doc:"the browser's view of the caller: same-origin or none (typed in); any other value is refused"`
	Origin    string `header:"Origin" doc:"when sent, this host's own origin (scheme://host[:port])"`
	Target    platform.Target
}

// ValidateParams refuses a request from another origin.
func (o *RequestOrigin) ValidateParams() error {
	if !sameOrigin(o.FetchSite, o.Origin, o.Target.Scheme, o.Target.Host) {
		return errCrossOrigin
	}
	return nil
}

// sameOrigin reports whether a request with cookies comes from the
// console's own pages: Sec-Fetch-Site, where the browser sends it, must be
// same-origin (or none: typed in, a bookmark), and an Origin header must
// name this host.
func sameOrigin(fetchSite, origin, scheme, host string) bool {
	switch fetchSite {
	case "", "same-origin", "none":
	default:
		return false
	}
	return origin == "" || strings.EqualFold(origin, scheme+"://"+host)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// validCSRF reports whether sent is the CSRF token of the session token tok.
func validCSRF(sent, tok string) bool {
	return sent != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(CSRFToken(tok))) == 1
}

// Authenticator wraps the identity domain's authenticator: a request
// without an Authorization header may use the session cookie, from this
// origin only, and with the session's CSRF token unless its method is safe.
// Cookies do not keep to a port, so a page on another port of the host can
// plant a second session cookie (its own session, to have the user work in
// it); a request with more than one is not signed in by any.
func (s *Service) Authenticator(inner platform.Authenticator) platform.Authenticator {
	return platform.AuthenticatorFunc(func(c fiber.Ctx) (*auth.Principal, error) {
		tok, n := platform.SoleCookie(c, SessionCookie)
		if n == 0 || len(c.Request().Header.Peek(fiber.HeaderAuthorization)) > 0 {
			return inner.Authenticate(c)
		}
		if n > 1 {
			return nil, errTwoSessions
		}
		if tok == "" {
			return inner.Authenticate(c)
		}
		if strings.HasPrefix(tok, identity.TokenPrefix) {
			return nil, errNoSession // the cookie holds sessions, never auth tokens
		}
		if !sameOrigin(c.Get("Sec-Fetch-Site"), c.Get(fiber.HeaderOrigin), c.Scheme(), c.Host()) {
			return nil, errCrossOrigin
		}
		if !safeMethod(c.Method()) && !validCSRF(c.Get(CSRFHeader), tok) {
			return nil, errCSRF
		}
		return s.id.Resolve(tok, platform.ClientIP(c))
	})
}

// cookie is one of the session's Set-Cookie lines: HttpOnly and
// SameSite=Strict always, Secure when the control plane's public URL or
// the request is https.
func (s *Service) cookie(name, value, path, scheme string, expires time.Time, maxAge int) string {
	c := &http.Cookie{Name: name, Value: value, Path: path, Expires: expires, MaxAge: maxAge,
		HttpOnly: true, Secure: s.secure || scheme == "https", SameSite: http.SameSiteStrictMode}
	return c.String()
}

// setCookies are the Set-Cookie lines of a started session.
func (s *Service) setCookies(res *identity.LoginResult, scheme string) []string {
	exp, err := time.Parse(time.RFC3339, res.ExpiresAt)
	if err != nil {
		exp = s.clock.Now().Add(24 * time.Hour)
	}
	return []string{
		s.cookie(SessionCookie, res.Token, "/", scheme, exp, 0),
		s.cookie(RefreshCookie, res.RefreshToken, SessionPath, scheme, time.Time{}, int((7 * 24 * time.Hour).Seconds())),
	}
}

// clearCookies are the Set-Cookie lines that drop both cookies.
func (s *Service) clearCookies(scheme string) []string {
	return []string{
		s.cookie(SessionCookie, "", "/", scheme, time.Unix(1, 0), -1),
		s.cookie(RefreshCookie, "", SessionPath, scheme, time.Unix(1, 0), -1),
	}
}

const (
	msgLoggedIn  = "Login successful"
	msgTwoFactor = "Two-factor code required"
)

// LoginReply is a console login's answer: the session's cookies, or the
// two-factor step (no cookies).
type LoginReply struct {
	SetCookie []string `header:"Set-Cookie" doc:"the session's cookies: deckhand_session (the access token, Path=/) and deckhand_refresh (the refresh token, Path=/api/v1/console/session), HttpOnly, SameSite=Strict, Secure over https"`
	Message   string
	Body      LoginStep
}

// SessionReply is a started or rotated session: its cookies and the CSRF
// token, never the tokens themselves.
type SessionReply struct {
	SetCookie []string `header:"Set-Cookie" doc:"the session's cookies: deckhand_session (the access token, Path=/) and deckhand_refresh (the refresh token, Path=/api/v1/console/session), HttpOnly, SameSite=Strict, Secure over https"`
	Body      Session
}

// started is the console's answer to a session identity started.
func (s *Service) started(res *identity.LoginResult, scheme string) (*SessionReply, error) {
	if res == nil || res.Token == "" {
		return nil, fault.Internal("start the console session", errors.New("login answered no session"))
	}
	return &SessionReply{SetCookie: s.setCookies(res, scheme),
		Body: Session{User: res.User, CSRFToken: CSRFToken(res.Token), ExpiresAt: res.ExpiresAt}}, nil
}

// LoginRequest is POST /api/v1/console/session: identity's login body,
// in tokens mode.
type LoginRequest struct {
	RequestOrigin
	Body identity.LoginInput
}

// Validate refuses the modes whose answer is no session.
func (r *LoginRequest) Validate() error {
	if r.Body.ResponseMode != "" && r.Body.ResponseMode != "tokens" {
		return fault.Invalid("response_mode", "the console session takes tokens mode only")
	}
	return nil
}

// Login is identity's login whose session goes into cookies.
func (s *Service) Login(ctx context.Context, in LoginRequest) (*LoginReply, error) {
	res, err := s.id.Login(ctx, in.Body)
	if err != nil {
		return nil, err
	}
	if res.Body != nil && res.Body.Requires2FA {
		return &LoginReply{Message: msgTwoFactor, Body: LoginStep{Requires2FA: true, TempToken: res.Body.TempToken}}, nil
	}
	out, err := s.started(res.Body, in.Target.Scheme)
	if err != nil {
		return nil, err
	}
	return &LoginReply{SetCookie: out.SetCookie, Body: LoginStep{Session: out.Body}}, nil
}

// TwoFactorInput is the body of the two-factor step.
type TwoFactorInput struct {
	TempToken string `json:"temp_token" required:"true" doc:"the login answer's temp_token"`
	Code      string `json:"code" required:"true" doc:"a current TOTP or backup code"`
}

// TwoFactorRequest is POST /api/v1/console/session/2fa.
type TwoFactorRequest struct {
	RequestOrigin
	Body TwoFactorInput
}

// VerifyTwoFactor is identity's two-factor step whose session goes into
// cookies.
func (s *Service) VerifyTwoFactor(ctx context.Context, in TwoFactorRequest) (*SessionReply, error) {
	res, err := s.id.VerifyTwoFactor(ctx, identity.Verify2FARequest{Body: identity.Verify2FAInput{TempToken: in.Body.TempToken, Code: in.Body.Code}})
	if err != nil {
		return nil, err
	}
	return s.started(res, in.Target.Scheme)
}

// SessionRead is GET /api/v1/console/session.
type SessionRead struct {
	Cookie        string `cookie:"deckhand_session" doc:"the session cookie; the CSRF token is derived from it"`
	Authorization string `header:"Authorization" doc:"Bearer <token>: a Bearer caller gets no CSRF token"`
}

// Session answers the signed-in user and, for a cookie session, its CSRF
// token.
func (s *Service) Session(ctx context.Context, in SessionRead) (*Session, error) {
	u, err := s.id.Me(ctx)
	if err != nil {
		return nil, err
	}
	out := &Session{User: u}
	if in.Cookie != "" && in.Authorization == "" {
		out.CSRFToken = CSRFToken(in.Cookie)
	}
	return out, nil
}

// RefreshRequest is POST /api/v1/console/session/refresh.
type RefreshRequest struct {
	RequestOrigin
	Refresh string `cookie:"deckhand_refresh" doc:"the session's refresh cookie (Path=/api/v1/console/session)"`
}

// Refresh rotates the session's tokens from its refresh cookie. It needs
// no CSRF token (the access token it derives from may have expired): a
// cross-origin page cannot send it anyway (same-origin check), and a
// rotation gives the caller nothing to read. A refused refresh token
// clears the cookies.
func (s *Service) Refresh(ctx context.Context, in RefreshRequest) (*SessionReply, error) {
	if in.Refresh == "" {
		return nil, errNoSession
	}
	res, err := s.id.Refresh(ctx, identity.RefreshRequest{Bearer: identity.Bearer{Authorization: "Bearer " + in.Refresh},
		Body: identity.RefreshInput{RefreshToken: in.Refresh}})
	if err != nil {
		var pe *fault.Error
		if errors.As(err, &pe) && pe.Code == fault.CodeUnauthorized {
			refused := *pe
			refused.SetCookies = append(refused.SetCookies[:len(refused.SetCookies):len(refused.SetCookies)], s.clearCookies(in.Target.Scheme)...)
			return nil, &refused
		}
		return nil, err
	}
	return s.started(res, in.Target.Scheme)
}

// LogoutRequest is DELETE /api/v1/console/session.
type LogoutRequest struct {
	RequestOrigin
	Cookie string `cookie:"deckhand_session" doc:"the session cookie"`
	CSRF   string `header:"X-CSRF-Token" doc:"the session's CSRF token (required with the cookie)"`
}

// LogoutReply clears the session's cookies.
type LogoutReply struct {
	SetCookie []string `header:"Set-Cookie" doc:"both session cookies, cleared"`
}

// Logout ends the session of a valid cookie (with its CSRF token) and
// clears the cookies in any case.
func (s *Service) Logout(ctx context.Context, in LogoutRequest) (*LogoutReply, error) {
	if in.Cookie != "" {
		if !validCSRF(in.CSRF, in.Cookie) {
			return nil, errCSRF
		}
		if p, err := s.id.Resolve(in.Cookie, auth.ClientIP(ctx)); err == nil && p.Kind == identity.KindSession {
			if err := s.id.Logout(auth.NewContext(ctx, p), struct{}{}); err != nil {
				return nil, err
			}
		}
	}
	return &LogoutReply{SetCookie: s.clearCookies(in.Target.Scheme)}, nil
}
