// Package identity owns the control plane's accounts and credentials:
// signup with mail verification and password recovery, password login with
// session JWTs (access 1 day, refresh 7 days, rotation with reuse
// detection), two-factor TOTP with backup codes, PKCE intent tokens, OAuth
// login through the codehost and webid providers, one-shot popup launch
// tickets, long-lived svc_ auth tokens with IP allow-lists, the admin users
// API and the abuse limits in front of all of it. It also answers for every
// other domain who is calling: Authenticate resolves a Bearer credential
// into the Principal the host puts in the request's context.
package identity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"deckhand/control/domain"
	"deckhand/control/mail"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"
	"deckhand/platform/secrets"
	"deckhand/platform/signing"
	"deckhand/platform/store"
)

// Config is identity's config section of the control plane's domain list
// (control/server maps the serve flags onto it).
type Config struct {
	Mailer                 mail.Mailer
	Sealer                 *secrets.Sealer
	Signups                bool
	PublicURL              string
	AllowedRedirectDomains []string
	Providers              map[string]OAuthProvider
	Regions                func() []string
	Limits                 *Limits
	// Keys sign identity claims (nil: --signing=false, no claims).
	Keys *signing.KeySet
}

// Open builds identity from its domain environment.
func Open(env domain.Env[Config]) (*Service, error) {
	c := env.Config
	svc, err := New(Deps{DB: env.Store, Clock: env.Clock, Logger: env.Logger, Limiter: env.Limiter,
		Mailer: c.Mailer, Sealer: c.Sealer, Signups: c.Signups, PublicURL: c.PublicURL,
		AllowedRedirectDomains: c.AllowedRedirectDomains, Providers: c.Providers, Regions: c.Regions, Limits: c.Limits, Keys: c.Keys})
	if err == nil && env.Authz != nil {
		env.Authz.Provide(CheckUserExists, svc.userExists)
	}
	if err == nil && env.Accounts != nil {
		env.Accounts.Provide(svc.contact)
		env.Accounts.ProvideByEmail(svc.idByEmail)
	}
	return svc, err
}

// Deps is everything identity.New takes: the domain environment's members
// and the config section, flat (tests build it directly).
type Deps struct {
	DB     *store.DB
	Clock  clockpkg.Clock
	Logger *slog.Logger
	// Limiter counts the rate limits (default: a store limiter on DB); the
	// host serving identity's routes must use the same one.
	Limiter ratelimit.Limiter
	Mailer  mail.Mailer
	// Signups false answers POST /api/v1/auth/signup with 403.
	Signups bool
	// PublicURL is the base of links identity makes (mail links, launch
	// URLs, the default frontend completion URL).
	PublicURL string
	// AllowedRedirectDomains limits redirect_uri and launch Origins; a
	// domain also admits its subdomains. Empty means "localhost".
	AllowedRedirectDomains []string
	// Providers maps "codehost" and "webid" to their endpoints; a provider
	// without AuthURL answers its routes with 503.
	Providers map[string]OAuthProvider
	// Regions lists the region ids signup may assign, in preference order
	// (no GeoIP data: the first one is the default). Nil accepts any
	// well-formed id and leaves the region empty when none is given.
	Regions func() []string
	// Limits overrides the abuse limits (nil: DefaultLimits).
	Limits *Limits
	// Sealer encrypts secrets at rest under the master key, which lives
	// outside the store (--master-key-file): the session JWT key and the
	// lookup key are kept in the store only sealed, as are TOTP secrets.
	// Required.
	Sealer *secrets.Sealer
	// HTTPClient talks to OAuth providers (default: 10s timeout).
	HTTPClient *http.Client
	// Keys sign identity claims (nil: no claims).
	Keys *signing.KeySet
}

// OAuthProvider is one external identity provider's endpoints.
type OAuthProvider struct {
	ClientID     string
	ClientSecret string
	AuthURL      string
	TokenURL     string
	UserInfoURL  string
	Scopes       []string
	// StarCheckURL answers intent=star_check (codehost): a GET with the
	// user's provider token that returns 204 when the user has starred the
	// project's repository and 404 when not, e.g.
	// https://api.github.com/user/starred/OWNER/REPO. Empty: the intent is
	// only carried to the completion URL.
	StarCheckURL string
}

// Service is the identity domain.
type Service struct {
	db        *store.DB
	clock     clockpkg.Clock
	log       *slog.Logger
	mailer    mail.Mailer
	signups   bool
	publicURL string
	domains   []string
	providers map[string]OAuthProvider
	regions   func() []string
	rules     rules
	limiter   ratelimit.Limiter
	httpc     *http.Client

	sealer *secrets.Sealer // TOTP secrets, OAuth verifiers and the two keys below at rest
	jwtKey []byte          // HS256 key of session JWTs
	macKey []byte          // HMAC key for refresh-token ids and token lookups

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	cache     *credCache
	stopCache context.CancelFunc
	cacheDone <-chan struct{}
	profiles  profiles // Me's fast path

	keys *signing.KeySet // identity claims (nil: none)

	usage sync.Map // auth token id → *tokenUsage (last_used_* not yet persisted)
	dummy string   // password hash compared when the account does not exist
}

// Buckets this package owns in the control store.
const (
	bucketMeta      = "identity_meta"
	bucketUsers     = "identity_users"
	bucketEmails    = "identity_users_by_email"
	bucketNames     = "identity_users_by_username"
	bucketLinks     = "identity_oauth_links"
	bucketSessions  = "identity_sessions"
	bucketTokens    = "identity_auth_tokens"
	bucketTokenHash = "identity_auth_tokens_by_hash"
	bucketOnce      = "identity_one_time"
	bucketLaunch    = "identity_launch_tickets"
)

// New opens the identity domain on deps.DB.
func New(deps Deps) (*Service, error) {
	if deps.DB == nil {
		return nil, errors.New("identity: a store is required")
	}
	if deps.Clock == nil {
		deps.Clock = clockpkg.SystemClock{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Mailer == nil {
		return nil, errors.New("identity: a mailer is required")
	}
	if deps.Sealer == nil {
		return nil, errors.New("identity: a sealer (the master key) is required")
	}
	if err := deps.DB.Declare(context.Background(), Tables...); err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	pub := strings.TrimRight(deps.PublicURL, "/")
	if pub == "" {
		pub = "http://127.0.0.1:8080"
	}
	if _, err := url.Parse(pub); err != nil {
		return nil, fmt.Errorf("identity: public URL: %w", err)
	}
	domains := make([]string, 0, len(deps.AllowedRedirectDomains))
	for _, d := range deps.AllowedRedirectDomains {
		if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
			domains = append(domains, strings.TrimPrefix(d, "."))
		}
	}
	if len(domains) == 0 {
		domains = []string{"localhost"}
	}
	limits := DefaultLimits()
	if deps.Limits != nil {
		limits = *deps.Limits
	}
	httpc := deps.HTTPClient
	if httpc == nil {
		httpc = &http.Client{Timeout: 10 * time.Second}
	}
	if deps.Limiter == nil {
		deps.Limiter = ratelimit.NewStoreLimiter(deps.DB, deps.Clock)
	}
	s := &Service{
		db: deps.DB, clock: deps.Clock, log: deps.Logger, mailer: deps.Mailer,
		signups: deps.Signups, publicURL: pub, domains: domains,
		providers: deps.Providers, regions: deps.Regions, rules: limits.rules(),
		limiter: deps.Limiter, httpc: httpc, cache: newCredCache(), sealer: deps.Sealer, keys: deps.Keys,
	}
	if err := s.loadKeys(); err != nil {
		return nil, err
	}
	if err := s.canonicalizeEmails(); err != nil {
		return nil, fmt.Errorf("identity: canonical addresses: %w", err)
	}
	dummy, err := secrets.HashPassword("not a real password: timing equalizer")
	if err != nil {
		return nil, err
	}
	s.dummy = dummy
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	cctx, cancel := context.WithCancel(context.Background())
	s.stopCache, s.cacheDone = cancel, s.listenCache(cctx)
	go s.janitor()
	return s, nil
}

// Close stops the janitor and flushes in-memory token usage to the store.
func (s *Service) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.flushUsage(context.Background())
	s.stopCache()
	<-s.cacheDone
	return nil
}

// Limiter is the rate limiter identity counts its ByValue limits with; a
// host serving identity's routes applies their IP limits through it too.
func (s *Service) Limiter() ratelimit.Limiter { return s.limiter }

// janitor sweeps expired one-time records and token usage once a minute
// (the server sweeps rate-limit windows).
func (s *Service) janitor() {
	defer close(s.done)
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sweepExpired()
			s.flushUsage(context.Background())
		}
	}
}

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

func unauthorized(msg string) *fault.Error {
	return &fault.Error{Code: fault.CodeUnauthorized, Message: msg}
}

func forbidden(msg string) *fault.Error {
	return &fault.Error{Code: fault.CodeForbidden, Message: msg}
}
