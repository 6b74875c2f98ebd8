package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Provider names of docs/spec/interface.md 4.4.
const (
	ProviderCodehost = "codehost"
	ProviderWebID    = "webid"
)

const (
	launchTTL      = 2 * time.Minute
	bindCookie     = "deckhand_oauth"
	completionPath = "/auth/complete"
)

// launchRec is a popup launch ticket, keyed by the ticket's lookup key.
type launchRec struct {
	Provider  string    `json:"provider"`
	Challenge string    `json:"challenge"`
	StateID   string    `json:"state_id"`
	Origin    string    `json:"origin"`
	ExpiresAt time.Time `json:"expires_at"`
	Used      bool      `json:"used"`
}

func (s *Service) provider(name string) (OAuthProvider, error) {
	p, ok := s.providers[name]
	if !ok || p.AuthURL == "" || p.TokenURL == "" || p.ClientID == "" {
		return p, fault.Errorf(fault.CodeUnavailable, "OAuth provider %s is not configured on this server", name)
	}
	return p, nil
}

func (s *Service) oauthConfig(name string, p OAuthProvider) *oauth2.Config {
	scopes := p.Scopes
	if scopes == nil {
		scopes = []string{"openid", "email", "profile"}
		if name == ProviderCodehost {
			scopes = []string{"read:user", "user:email"}
		}
	}
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: p.ClientSecret, Scopes: scopes,
		Endpoint:    oauth2.Endpoint{AuthURL: p.AuthURL, TokenURL: p.TokenURL},
		RedirectURL: s.publicURL + "/api/v1/auth/" + name + "/callback"}
}

// allowedHost: the host is an allowed domain or a subdomain of one.
func (s *Service) allowedHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range s.domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// checkRedirect validates a redirect_uri against the allowed domains.
func (s *Service) checkRedirect(raw string) (string, error) {
	if raw == "" {
		return s.publicURL + completionPath, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" || len(raw) > 2048 {
		return "", fault.Invalid("redirect_uri", "must be an absolute http(s) URL without credentials or fragment")
	}
	if !s.allowedHost(u.Hostname()) {
		return "", fault.Invalid("redirect_uri", "must be on an allowed domain (%s)", strings.Join(s.domains, ", "))
	}
	return u.String(), nil
}

// beginFlow stores a state record in tx and returns the provider URL and
// the browser binding cookie value.
func (s *Service) beginFlow(tx *store.Tx, name string, p OAuthProvider, rec onceRec) (string, string, error) {
	verifier := oauth2.GenerateVerifier()
	sealed, err := s.sealer.Seal(purposeVerifier, []byte(verifier))
	if err != nil {
		return "", "", err
	}
	bind := randomToken(24)
	rec.Kind, rec.Provider, rec.Verifier, rec.BrowserBind = onceState, name, sealed, s.lookupKey("bind\x00"+bind)
	state, err := s.issueOnce(tx, rec)
	if err != nil {
		return "", "", err
	}
	return s.oauthConfig(name, p).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), bind, nil
}

// bindCookieSet is the Set-Cookie line binding a flow to its browser.
func (s *Service) bindCookieSet(value string) string {
	c := &http.Cookie{Name: bindCookie, Value: value, Path: "/api/v1/auth", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: strings.HasPrefix(s.publicURL, "https://"), MaxAge: int(onceTTL[onceState].Seconds())}
	return c.String()
}

// bindCookieClear is the Set-Cookie line that drops the binding once the
// flow is done.
func bindCookieClear() string {
	c := &http.Cookie{Name: bindCookie, Value: "", Path: "/api/v1/auth", HttpOnly: true, MaxAge: -1, Expires: time.Unix(1, 0)}
	return c.String()
}

// Redirect is a browser flow's 302: where the browser goes next and the
// flow's binding cookie. The routes add flowHeaders to every answer.
type Redirect struct {
	Location  string   `header:"Location" doc:"where the browser goes next"`
	SetCookie []string `header:"Set-Cookie" doc:"deckhand_oauth: binds the flow to this browser (HttpOnly, Path=/api/v1/auth); cleared when the flow completes"`
}

func redirectTo(to, cookie string) *Redirect {
	return &Redirect{Location: to, SetCookie: []string{cookie}}
}

// flowHeaders keep a browser flow's one-time values (state, code, ticket
// in the URL) out of Referer and caches, on errors as on redirects.
var flowHeaders = map[string]string{"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

// OAuthStartInput starts an OAuth login (the query of GET /api/v1/auth/<provider>).
type OAuthStartInput struct {
	Intent              string `query:"intent" enum:"login,star_check" doc:"login (default) or star_check (codehost only)"`
	RedirectURI         string `query:"redirect_uri" doc:"frontend completion URL on an allowed domain (default <public-url>/auth/complete)"`
	CodeChallenge       string `query:"code_challenge" required:"true" doc:"base64url SHA-256 of the client's code_verifier (S256, 43-128 characters)"`
	CodeChallengeMethod string `query:"code_challenge_method" enum:"S256" doc:"S256 (the only method; may be omitted)"`
}

// WebIDStartInput starts a webid login, which has no intents.
type WebIDStartInput struct {
	RedirectURI         string `query:"redirect_uri" doc:"frontend completion URL on an allowed domain (default <public-url>/auth/complete)"`
	CodeChallenge       string `query:"code_challenge" required:"true" doc:"base64url SHA-256 of the client's code_verifier (S256, 43-128 characters)"`
	CodeChallengeMethod string `query:"code_challenge_method" enum:"S256" doc:"S256 (the only method; may be omitted)"`
}

// check checks intent and PKCE challenge for provider.
func (in *OAuthStartInput) check(provider string) error {
	switch {
	case in.Intent == "" || in.Intent == "login":
		in.Intent = "login"
	case in.Intent == "star_check" && provider == ProviderCodehost:
	default:
		if provider == ProviderCodehost {
			return fault.Invalid("intent", "must be login or star_check")
		}
		return fault.Invalid("intent", "is not supported by this provider")
	}
	if err := validChallenge("code_challenge", in.CodeChallenge); err != nil {
		return err
	}
	if in.CodeChallengeMethod != "" && in.CodeChallengeMethod != "S256" {
		return fault.Invalid("code_challenge_method", "must be S256")
	}
	return nil
}

// StartCodehost begins a codehost login.
func (s *Service) StartCodehost(ctx context.Context, in OAuthStartInput) (*Redirect, error) {
	return s.startOAuth(ctx, ProviderCodehost, in)
}

// StartWebID begins a webid login.
func (s *Service) StartWebID(ctx context.Context, in WebIDStartInput) (*Redirect, error) {
	return s.startOAuth(ctx, ProviderWebID, OAuthStartInput{RedirectURI: in.RedirectURI, CodeChallenge: in.CodeChallenge,
		CodeChallengeMethod: in.CodeChallengeMethod})
}

// startOAuth begins a provider login: a 302 to the provider's authorize
// URL with our own PKCE challenge and a fresh single-use state, and the
// cookie that binds the flow to the browser.
func (s *Service) startOAuth(_ context.Context, provider string, in OAuthStartInput) (*Redirect, error) {
	if err := in.check(provider); err != nil {
		return nil, err
	}
	redirect, err := s.checkRedirect(in.RedirectURI)
	if err != nil {
		return nil, err
	}
	p, err := s.provider(provider)
	if err != nil {
		return nil, err
	}
	var to, bind string
	err = s.update(func(tx *store.Tx) error {
		var err error
		to, bind, err = s.beginFlow(tx, provider, p, onceRec{Challenge: in.CodeChallenge, RedirectURI: redirect, Intent: in.Intent})
		return err
	})
	if err != nil {
		return nil, fault.Wrap("start the OAuth flow", err)
	}
	return redirectTo(to, s.bindCookieSet(bind)), nil
}

var errBadState = fault.Invalid("state", "is invalid, used or expired (start the login again)")

// OAuthCallbackInput is the provider's answer at the callback, with the
// browser's binding cookie.
type OAuthCallbackInput struct {
	State string `query:"state" doc:"the state this server sent (CSRF check)"`
	Code  string `query:"code" doc:"provider authorization code"`
	Error string `query:"error" doc:"the provider's refusal, when it refused"`
	Bind  string `cookie:"deckhand_oauth" doc:"binds the flow to the browser that started it (set when it started)"`
}

// CodehostCallback completes a codehost login.
func (s *Service) CodehostCallback(ctx context.Context, in OAuthCallbackInput) (*Redirect, error) {
	return s.completeRedirect(ctx, ProviderCodehost, in)
}

// WebIDCallback completes a webid login.
func (s *Service) WebIDCallback(ctx context.Context, in OAuthCallbackInput) (*Redirect, error) {
	return s.completeRedirect(ctx, ProviderWebID, in)
}

// completeRedirect is the 302 to the completion URL, dropping the flow's
// binding cookie.
func (s *Service) completeRedirect(ctx context.Context, provider string, in OAuthCallbackInput) (*Redirect, error) {
	to, err := s.CompleteOAuth(ctx, provider, in)
	if err != nil {
		return nil, err
	}
	return redirectTo(to, bindCookieClear()), nil
}

// CompleteOAuth finishes a provider login and returns the frontend
// completion URL: with a one-time `code`, the 2FA step, or `error=<reason>`.
func (s *Service) CompleteOAuth(ctx context.Context, provider string, in OAuthCallbackInput) (string, error) {
	if in.State == "" {
		return "", fault.Invalid("state", "is required")
	}
	if in.Code == "" && in.Error == "" {
		return "", fault.Invalid("code", "is required")
	}
	p, err := s.provider(provider)
	if err != nil {
		return "", err
	}
	var rec *onceRec
	err = s.update(func(tx *store.Tx) error {
		var err error
		rec, err = s.takeOnce(tx, onceState, in.State)
		return err
	})
	if err != nil {
		return "", fault.Internal("check the OAuth state", err)
	}
	if rec == nil || rec.Provider != provider {
		return "", errBadState
	}
	if in.Bind == "" || s.lookupKey("bind\x00"+in.Bind) != rec.BrowserBind {
		return "", fault.Invalid("state", "does not belong to this browser (the login was started elsewhere)")
	}
	done := func(q url.Values) (string, error) {
		if rec.StateID != "" {
			q.Set("state_id", rec.StateID)
		}
		q.Set("provider", provider)
		if rec.Intent != "" {
			q.Set("intent", rec.Intent)
		}
		return withQuery(rec.RedirectURI, q), nil
	}
	if in.Error != "" {
		return done(url.Values{"error": {sanitizeErr(in.Error)}})
	}
	verifier, err := s.sealer.Open(purposeVerifier, rec.Verifier)
	if err != nil {
		return "", fault.Internal("read the OAuth state", err)
	}
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	octx = context.WithValue(octx, oauth2.HTTPClient, s.httpc)
	tok, err := s.oauthConfig(provider, p).Exchange(octx, in.Code, oauth2.VerifierOption(string(verifier)))
	if err != nil {
		s.log.Warn("OAuth code exchange failed", "provider", provider, "err", err)
		return done(url.Values{"error": {"exchange_failed"}})
	}
	info, err := s.userinfo(octx, p, tok)
	if err != nil {
		s.log.Warn("OAuth userinfo failed", "provider", provider, "err", err)
		return done(url.Values{"error": {"userinfo_failed"}})
	}
	userID, err := s.linkAccount(provider, info, auth.ClientIP(ctx))
	if err != nil {
		if pe := fault.AsError(err); pe.Code == fault.CodeForbidden {
			return done(url.Values{"error": {"account_banned"}})
		}
		return "", fault.Wrap("sign in with the provider", err)
	}
	extra := url.Values{}
	if rec.Intent == "star_check" && p.StarCheckURL != "" {
		extra.Set("starred", strconv.FormatBool(s.starred(octx, p, tok)))
	}
	res, err := s.completeLogin(ctx, userID, "oauth:"+provider, "intent", rec.Challenge, true)
	if err != nil {
		if pe := fault.AsError(err); pe.Code == fault.CodeForbidden {
			return done(url.Values{"error": {"account_banned"}})
		}
		return "", err
	}
	if res.Requires2FA {
		extra.Set("requires_2fa", "true")
		extra.Set("temp_token", res.TempToken)
		return done(extra)
	}
	extra.Set("code", res.AuthIntentToken)
	return done(extra)
}

var errWord = regexp.MustCompile(`[^a-z0-9_]`)

func sanitizeErr(s string) string {
	s = errWord.ReplaceAllString(strings.ToLower(s), "")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "provider_error"
	}
	return s
}

func withQuery(base string, q url.Values) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	cur := u.Query()
	for k, v := range q {
		cur[k] = v
	}
	u.RawQuery = cur.Encode()
	return u.String()
}

// starred asks the provider whether the user starred the project's
// repository (204 yes, anything else no).
func (s *Service) starred(ctx context.Context, p OAuthProvider, tok *oauth2.Token) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.StarCheckURL, nil)
	if err != nil {
		return false
	}
	tok.SetAuthHeader(req)
	res, err := s.httpc.Do(req)
	if err != nil {
		s.log.Warn("star check failed", "err", err)
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusNoContent
}

// providerUser is what identity reads from a userinfo answer: GitHub-style
// (id, login, email) or OpenID Connect (sub, preferred_username, email,
// email_verified).
type providerUser struct {
	Subject       string
	Email         string
	EmailVerified bool
	Login         string
	Name          string
}

func (s *Service) userinfo(ctx context.Context, p OAuthProvider, tok *oauth2.Token) (*providerUser, error) {
	if p.UserInfoURL == "" {
		return nil, fmt.Errorf("no userinfo URL configured")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.UserInfoURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	tok.SetAuthHeader(req)
	res, err := s.httpc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("userinfo answered %d", res.StatusCode)
	}
	var raw map[string]any
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("userinfo body: %w", err)
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			switch v := raw[k].(type) {
			case string:
				if v != "" {
					return v
				}
			case float64:
				return strconv.FormatFloat(v, 'f', -1, 64)
			}
		}
		return ""
	}
	u := &providerUser{Subject: str("sub", "id", "user_id"), Email: strings.ToLower(str("email")),
		Login: str("login", "preferred_username", "username", "nickname"), Name: str("name")}
	u.EmailVerified = true
	if v, ok := raw["email_verified"].(bool); ok {
		u.EmailVerified = v
	}
	if u.Subject == "" {
		return nil, fmt.Errorf("userinfo has no subject (sub or id)")
	}
	if u.Email != "" {
		if e, err := normalizeEmail("email", u.Email); err != nil {
			u.Email = ""
		} else {
			u.Email = e
		}
	}
	return u, nil
}

// linkAccount returns the account for a provider identity: the linked one,
// else the account with the same verified email (linked now), else a new
// verified account.
func (s *Service) linkAccount(provider string, info *providerUser, ip string) (string, error) {
	var id string
	err := s.update(func(tx *store.Tx) error {
		key := provider + ":" + info.Subject
		if raw := tx.GetRaw(bucketLinks, key); raw != nil {
			u, err := getUser(tx, string(raw))
			if err != nil {
				return err
			}
			if u != nil {
				if u.IsBanned {
					return errBanned
				}
				id = u.ID
				return nil
			}
		}
		var u *userRec
		if info.Email != "" && info.EmailVerified {
			var err error
			if u, err = userByIndex(tx, bucketEmails, info.Email); err != nil {
				return err
			}
		}
		if u == nil {
			email := info.Email
			if email != "" && (!info.EmailVerified || tx.GetRaw(bucketEmails, email) != nil) {
				email = ""
			}
			username := ""
			if info.Login != "" && validUsername("username", info.Login) == nil && tx.GetRaw(bucketNames, strings.ToLower(info.Login)) == nil {
				username = info.Login
			}
			if username == "" && email == "" {
				username = provider + "-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
			}
			region, _ := s.pickRegion("")
			var err error
			if u, err = s.createUser(tx, newUser{Email: email, Username: username, Verified: true, Region: region,
				IP: ip, Source: "oauth:" + provider}); err != nil {
				return err
			}
		} else if !u.EmailVerified {
			// The password of an account nobody verified was never proven
			// to belong to the mailbox owner, who is signing in now: drop
			// it (account pre-hijacking).
			u.EmailVerified, u.PasswordHash, u.UpdatedAt = true, "", s.now()
			if err := putUser(tx, u); err != nil {
				return err
			}
		}
		if u.IsBanned {
			return errBanned
		}
		id = u.ID
		return tx.PutRaw(bucketLinks, key, []byte(u.ID))
	})
	return id, err
}

// LaunchInput is the body of launch/initiate; Origin is the request's
// Origin header, which the ticket is bound to.
type LaunchInput struct {
	Provider      string `json:"provider" required:"true" enum:"codehost,webid"`
	CodeChallenge string `json:"code_challenge" required:"true"`
	StateID       string `json:"state_id" required:"true"`
	Origin        string `json:"-"`
}

// Origin is the request's Origin header, which a launch ticket is bound to.
type Origin struct {
	Origin string `header:"Origin" doc:"the page's origin (scheme://host[:port]) on an allowed redirect domain"`
}

// LaunchRequest is POST /api/v1/auth/launch/initiate.
type LaunchRequest struct {
	Origin
	Body LaunchInput
}

// LaunchStartInput is GET /api/v1/auth/launch/start.
type LaunchStartInput struct {
	Origin
	Ticket string `query:"ticket" required:"true" doc:"the launch ticket from launch_url"`
}

var uuidV4 = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`)

// Validate checks provider, challenge and state_id.
func (r *LaunchInput) Validate() error {
	if r.Provider != ProviderCodehost && r.Provider != ProviderWebID {
		return fault.Invalid("provider", "must be codehost or webid")
	}
	if err := validChallenge("code_challenge", r.CodeChallenge); err != nil {
		return err
	}
	if !uuidV4.MatchString(r.StateID) {
		return fault.Invalid("state_id", "must be a UUID v4")
	}
	return nil
}

// LaunchResult is data of launch/initiate.
type LaunchResult struct {
	LaunchURL string `json:"launch_url"`
	ExpiresAt string `json:"expires_at"`
}

// originOf normalizes an Origin header value (scheme://host[:port]).
func originOf(raw string) (string, string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), u.Hostname(), true
}

// InitiateLaunch issues a one-shot popup launch ticket bound to the
// requesting page's Origin.
func (s *Service) InitiateLaunch(_ context.Context, req LaunchRequest) (*LaunchResult, error) {
	in := req.Body
	in.Origin = req.Origin.Origin
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.Origin == "" {
		return nil, fault.Invalid("Origin", "header is required: the ticket is bound to the page that asks for it")
	}
	origin, host, ok := originOf(in.Origin)
	if !ok {
		return nil, fault.Invalid("Origin", "must be scheme://host[:port]")
	}
	if !s.allowedHost(host) {
		return nil, forbidden("Origin " + origin + " is not on an allowed redirect domain")
	}
	if _, err := s.provider(in.Provider); err != nil {
		return nil, err
	}
	ticket := randomToken(32)
	exp := s.now().Add(launchTTL)
	stateID := strings.ToLower(in.StateID)
	err := s.update(func(tx *store.Tx) error {
		// A state_id names one attempt: a second ticket for it would let a
		// replayed initiate race the real one, so it is refused while the
		// first ticket is remembered (its expiry plus the sweep's hour).
		stateKey := s.lookupKey("launch-state\x00" + stateID)
		if tx.GetRaw(bucketLaunch, stateKey) != nil {
			return errStateIDReused
		}
		if err := tx.Put(bucketLaunch, stateKey, launchRec{StateID: stateID, ExpiresAt: exp}); err != nil {
			return err
		}
		return tx.Put(bucketLaunch, s.lookupKey("launch\x00"+ticket), launchRec{Provider: in.Provider, Challenge: in.CodeChallenge,
			StateID: stateID, Origin: origin, ExpiresAt: exp})
	})
	if errors.Is(err, errStateIDReused) {
		return nil, errStateIDReused
	}
	if err != nil {
		return nil, fault.Internal("issue the launch ticket", err)
	}
	return &LaunchResult{LaunchURL: s.publicURL + "/api/v1/auth/launch/start?ticket=" + url.QueryEscape(ticket),
		ExpiresAt: exp.Format(time.RFC3339)}, nil
}

var errStateIDReused = &fault.Error{Code: fault.CodeConflict, Field: "state_id", Details: "state_id",
	Message: "state_id: already used for a launch ticket; send a new UUID v4 per attempt"}

var errTicketGone = fault.Errorf(fault.CodeGone, "launch ticket is already used or has expired")

// StartLaunch consumes a launch ticket (once, atomically) and begins its
// provider flow; the request's Origin, when it sent one, must be the
// ticket's.
func (s *Service) StartLaunch(_ context.Context, in LaunchStartInput) (*Redirect, error) {
	ticket, origin := in.Ticket, in.Origin.Origin
	if ticket == "" {
		return nil, fault.Invalid("ticket", "is required")
	}
	var to, bind string
	err := s.update(func(tx *store.Tx) error {
		key := s.lookupKey("launch\x00" + ticket)
		var t launchRec
		ok, err := tx.Get(bucketLaunch, key, &t)
		if err != nil {
			return err
		}
		if !ok || t.Used || !s.now().Before(t.ExpiresAt) {
			return errTicketGone
		}
		if origin != "" {
			if got, _, _ := originOf(origin); got != t.Origin {
				return forbidden("launch ticket belongs to another origin")
			}
		}
		p, err := s.provider(t.Provider)
		if err != nil {
			return err
		}
		t.Used = true
		if err := tx.Put(bucketLaunch, key, &t); err != nil {
			return err
		}
		to, bind, err = s.beginFlow(tx, t.Provider, p, onceRec{Challenge: t.Challenge, StateID: t.StateID,
			RedirectURI: t.Origin + completionPath, Intent: "login"})
		return err
	})
	if err != nil {
		return nil, fault.Wrap("start the launch", err)
	}
	return redirectTo(to, s.bindCookieSet(bind)), nil
}
