// Package server owns the assembly of the control plane: it opens the
// embedded store (bbolt, or PostgreSQL with --database-url: storage.go),
// the signing keys, the event log and the rate limiter, builds every domain
// of its list (domains.go) from one domain.Env, and serves their route
// tables on one platform.Host — which enforces each route's policy and rate
// limits — whose every response is signed.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"deckhand/control/console"
	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/identity"
	"deckhand/control/meta"
	"deckhand/platform"
	"deckhand/platform/auth"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/config"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"
	"deckhand/platform/secrets"
	"deckhand/platform/signing"
	"deckhand/platform/store"

	"github.com/gofiber/fiber/v3"
)

// AdminEnsurer creates the bootstrap admin of --admin-email/--admin-password.
type AdminEnsurer interface {
	EnsureAdmin(email, password string) (created bool, err error)
}

// Option adds to what New assembles (tests, later composition).
type Option func(*Server)

// WithAuthenticator replaces the identity domain's authenticator (tests of
// the guard itself).
func WithAuthenticator(a platform.Authenticator) Option {
	return func(s *Server) { s.authOverride = a }
}

// Server is an assembled control plane.
type Server struct {
	cfg          Config
	log          *slog.Logger
	clock        clockpkg.Clock
	out          io.Writer
	db           *store.DB
	sealer       *secrets.Sealer // secrets at rest, under --master-key-file
	keys         *signing.KeySet // nil with --signing=false
	signer       *signing.Signer // nil with --signing=false
	events       *events.Log
	regions      []meta.Region
	limiter      *ratelimit.StoreLimiter
	authz        *domain.Authorizer
	payments     *domain.Payments
	auth         platform.Authenticator
	authOverride platform.Authenticator
	admin        AdminEnsurer
	domains      []contract.Service
	extra        []entry
	host         *platform.Host
	ln           net.Listener
	pages        fiber.Handler // the console's pages (console.Service.Pages)
	stopWatch    func()        // ends the signing-key watch (storage.go)
	proxyLn      net.Listener  // --proxy-listen (proxy.go)
	// Containers that run (runtime.go).
	installation string
	driver       engine // nil with --runtime none
	agentMu      sync.Mutex
	agentURL     string     // the agents' listener on the engine bridge, once opened
	serving      *listeners // the API's listener and the agents'
}

// ErrDataInUse means another process serves the same --data directory.
var ErrDataInUse = errors.New("another deckhand-control process is using this --data directory")

// New validates cfg, opens the store and keys, binds the listener and
// assembles the domains; Run then serves. On error,
// whatever it opened is closed again.
func New(cfg Config, opts ...Option) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, out: cfg.Stdout}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = config.Logger(os.Stderr, cfg.LogLevel)
	}
	if s.clock == nil {
		s.clock = clockpkg.SystemClock{}
	}
	if s.out == nil {
		s.out = io.Discard
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()

	// The store first: its file lock is what makes a second process on the
	// same --data fail fast, before it touches keys or ports.
	if s.db, err = s.openStore(); err != nil { // storage.go
		return nil, err
	}
	if s.sealer, err = s.openMasterKey(); err != nil {
		return nil, err
	}
	if cfg.Signing {
		if s.keys, err = s.openKeys(); err != nil {
			return nil, err
		}
		s.signer = signing.NewSigner(s.keys, s.clock)
		s.watchKeys()
	}
	s.events = events.NewLog(s.db, s.clock)
	// Bind before building domains so PublicURL is final (also for :0).
	if err = s.listen(); err != nil {
		return nil, err
	}
	if err = s.openRuntime(); err != nil {
		return nil, err
	}

	regionsFile, optional := cfg.RegionsFile, false
	if regionsFile == "" {
		regionsFile, optional = filepath.Join(cfg.Data, "regions.json"), true
	}
	if s.regions, err = meta.LoadRegions(regionsFile, optional); err != nil {
		return nil, err
	}

	if err = s.buildDomains(); err != nil {
		return nil, err
	}
	var tables [][]platform.Route
	for _, d := range s.domains {
		tables = append(tables, d.Routes())
	}
	if missing := s.authz.Missing(); len(missing) > 0 {
		return nil, fmt.Errorf("routes require resource checks no domain provides: %v", missing)
	}
	if s.payments.Missing() {
		return nil, fmt.Errorf("a domain charges balances and no domain provides payments (the wallet)")
	}
	hc := platform.HostConfig{
		Info: platform.Info{Name: "control", Title: "deckhand control plane", Version: platform.Version,
			Description: "Accounts, sessions, signing keys and the platform resources of deckhand. " +
				"Every response carries X-Service-Signature (ED25519 over `<t>.<body>`, keys at " +
				signing.PublicKeyPath + "); errors are `{statusCode, error, message}` envelopes, also for a request no route " +
				"can take: an unknown method is 501, a method that is not an HTTP token 400, a header block that does not " +
				"arrive within --header-timeout closes the connection. The web console is served at / (its pages and files only; " +
				"every other path is the API's); it signs in with cookies at " + console.SessionPath + "."},
		Style:         platform.EnvelopeErrors,
		Logger:        s.log,
		Auth:          s.auth,
		Limiter:       s.limiter,
		HeaderTimeout: cfg.HeaderTimeout,
	}
	if s.pages != nil {
		hc.Middleware = append(hc.Middleware, s.pages)
	}
	if s.signer != nil {
		hc.Finalize = s.signer.Finalize
	}
	if cfg.TrustProxyHeaders {
		hc.ProxyHeader = fiber.HeaderXForwardedFor
	}
	s.host = platform.NewHost(hc, tables...)
	return s, nil
}

// KeysDir is where a data directory keeps its signing keys.
func KeysDir(data string) string { return filepath.Join(data, "keys") }

// buildDomains builds every domain of the list (and the extra ones of
// WithDomain) from one environment, and finds the authenticator and the
// admin bootstrapper among them.
func (s *Server) buildDomains() error {
	s.limiter = ratelimit.NewStoreLimiter(s.db, s.clock)
	s.authz = domain.NewAuthorizer()
	s.payments = &domain.Payments{}
	issuers := map[string]domain.CredentialIssuer{}
	base := domain.Env[domain.NoConfig]{Store: s.db, Clock: s.clock, Events: s.events, Authz: s.authz, Payments: s.payments,
		Accounts: &domain.Accounts{}, Images: &domain.Images{}, Limiter: s.limiter}
	for _, e := range append(append([]entry(nil), domains...), s.extra...) {
		env := base
		env.Name, env.Logger = e.name, s.log.With("domain", e.name)
		svc, err := e.build(s, env)
		if err != nil {
			return err
		}
		s.domains = append(s.domains, svc)
		if a, ok := svc.(platform.Authenticator); ok {
			if s.auth != nil {
				return fmt.Errorf("%s: a second authenticator (one domain answers who is calling)", e.name)
			}
			s.auth = a
		}
		if a, ok := svc.(AdminEnsurer); ok {
			s.admin = a
		}
		if is, ok := svc.(domain.CredentialIssuer); ok {
			prefix := is.CredentialPrefix()
			if len(prefix) < 3 || strings.HasPrefix(identity.TokenPrefix, prefix) || strings.HasPrefix(prefix, identity.TokenPrefix) {
				return fmt.Errorf("%s: credential prefix %q is too short or overlaps the identity domain's %q", e.name, prefix, identity.TokenPrefix)
			}
			for other := range issuers {
				if strings.HasPrefix(prefix, other) || strings.HasPrefix(other, prefix) {
					return fmt.Errorf("%s: credential prefix %q overlaps %q", e.name, prefix, other)
				}
			}
			issuers[prefix] = is
		}
	}
	for _, d := range s.domains {
		// The console signs in with cookies: its authenticator takes the
		// session cookie (same origin, CSRF token) where no header is sent.
		if c, ok := d.(*console.Service); ok && s.auth != nil {
			s.auth = c.Authenticator(s.auth)
			s.pages = c.Pages
		}
	}
	if s.authOverride != nil {
		s.auth = s.authOverride
	}
	if s.auth == nil {
		s.auth = refuseAll
	}
	if len(issuers) > 0 {
		s.auth = prefixedAuth{issuers: issuers, next: s.auth}
	}
	return nil
}

// prefixedAuth resolves the credentials of CredentialIssuer domains by
// their prefix and hands every other one to the identity domain.
type prefixedAuth struct {
	issuers map[string]domain.CredentialIssuer
	next    platform.Authenticator
}

func (a prefixedAuth) Authenticate(c fiber.Ctx) (*auth.Principal, error) {
	if raw, ok := platform.BearerToken(c); ok {
		for prefix, is := range a.issuers {
			if strings.HasPrefix(raw, prefix) {
				return is.ResolveCredential(auth.WithClientIP(c.Context(), platform.ClientIP(c)), raw)
			}
		}
	}
	return a.next.Authenticate(c)
}

// refuseAll answers every credentialed route with 401 when no domain
// authenticates (a build without identity).
var refuseAll = platform.AuthenticatorFunc(func(fiber.Ctx) (*auth.Principal, error) {
	return nil, fault.Errorf(fault.CodeUnauthorized, "Authentication required")
})

// BuiltinRegistrar registers the images of a deckhand version in the
// catalog when absent (the images domain), answering how many it added.
type BuiltinRegistrar interface {
	RegisterBuiltin(ctx context.Context, version string) (int, error)
}

// Bootstrap runs each domain's Bootstrap, registers the built-in images
// (--builtin-images) and runs the admin bootstrap.
func (s *Server) Bootstrap(ctx context.Context) error {
	for _, d := range s.domains {
		if b, ok := d.(domain.Bootstrapper); ok {
			if err := b.Bootstrap(ctx); err != nil {
				return err
			}
		}
		if r, ok := d.(BuiltinRegistrar); ok && s.cfg.BuiltinImages {
			if _, err := r.RegisterBuiltin(ctx, platform.Version); err != nil {
				return fmt.Errorf("built-in images: %w", err)
			}
		}
	}
	if s.cfg.AdminEmail == "" {
		return nil
	}
	if s.admin == nil {
		s.log.Warn("admin bootstrap skipped: no identity domain in this build", "email", s.cfg.AdminEmail)
		fmt.Fprintf(s.out, "deckhand-control: admin bootstrap skipped for %s (identity is not built yet)\n", s.cfg.AdminEmail)
		return nil
	}
	created, err := s.admin.EnsureAdmin(s.cfg.AdminEmail, s.cfg.AdminPassword)
	if err != nil {
		return fmt.Errorf("admin bootstrap for %s: %w", s.cfg.AdminEmail, err)
	}
	state := "already exists"
	if created {
		state = "created"
	}
	s.log.Info("admin bootstrap", "email", s.cfg.AdminEmail, "created", created)
	fmt.Fprintf(s.out, "deckhand-control: admin user %s %s\n", s.cfg.AdminEmail, state)
	return nil
}

// listen binds the API address and fills the default public URL from the
// bound address (so --listen 127.0.0.1:0 gives a usable URL).
func (s *Server) listen() error {
	// A socket systemd passed (deckhand-control.socket) wins over --listen.
	ln, err := platform.Listen("--listen", s.cfg.Listen)
	if err != nil {
		return err
	}
	s.ln = ln
	s.serving = newListeners(ln)
	if err := s.listenProxy(); err != nil {
		_ = ln.Close()
		return err
	}
	if s.cfg.PublicURL == "" {
		s.cfg.PublicURL = "http://" + ln.Addr().String()
	}
	return nil
}

// URL is the base URL of the bound listener.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Run bootstraps, then serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Bootstrap(ctx); err != nil {
		return err
	}
	return s.Serve(ctx)
}

// Serve answers on the bound listener until ctx ends, then shuts down
// gracefully (in-flight requests get up to 10 s).
func (s *Server) Serve(ctx context.Context) error {
	ln := s.ln
	kid := "off"
	if s.keys != nil {
		kid = s.keys.Active().ID
	}
	s.log.Info("control plane listening", "addr", ln.Addr().String(), "data", s.cfg.Data, "store", s.db.Location(), "signing_kid", kid)
	fmt.Fprintf(s.out, "deckhand-control: listening on http://%s (data %s, store %s, signing key %s)\n", ln.Addr(), s.cfg.Data, s.db.Location(), kid)
	if s.driver != nil {
		s.log.Info("containers run on the engine", "runtime", s.cfg.Runtime, "installation", s.installation)
		fmt.Fprintf(s.out, "deckhand-control: containers run on %s (installation %s)\n", s.cfg.Runtime, s.installation)
	} else {
		fmt.Fprintf(s.out, "deckhand-control: --runtime %s: container records only, nothing runs\n", s.cfg.Runtime)
	}
	ln = s.serving
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go s.limiter.RunSweeper(sweepCtx, time.Minute, func(err error) { s.log.Warn("rate-limit sweep failed", "err", err) })
	stopProxy, err := s.serveProxy(ctx)
	if err != nil {
		return err
	}
	defer stopProxy()
	errc := make(chan error, 1)
	go func() { errc <- s.host.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.host.Shutdown(sctx)
	// Shutdown only closes listeners the server has registered; closing ours
	// too ends a Serve that had not got that far yet.
	_ = ln.Close()
	if serr := <-errc; serr != nil {
		return serr
	}
	if err != nil && !errors.Is(err, fiber.ErrNotRunning) {
		return err
	}
	return nil
}

// ReloadKeys re-reads the key directory (SIGHUP after `keys rotate`).
func (s *Server) ReloadKeys() error {
	if s.keys == nil {
		return nil
	}
	if err := s.keys.Reload(); err != nil {
		return err
	}
	s.log.Info("signing keys reloaded", "active_kid", s.keys.Active().ID, "keys", len(s.keys.Keys()))
	return nil
}

// Close releases domains and the store.
func (s *Server) Close() error {
	var errs []error
	if s.stopWatch != nil {
		s.stopWatch()
		s.stopWatch = nil
	}
	for _, d := range s.domains {
		if c, ok := d.(contract.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	if s.ln != nil {
		_ = s.ln.Close() // already closed after a served Run
		s.ln = nil
	}
	if s.serving != nil {
		_ = s.serving.Close()
	}
	if s.proxyLn != nil {
		_ = s.proxyLn.Close()
		s.proxyLn = nil
	}
	if s.driver != nil {
		errs = append(errs, s.driver.Close())
		s.driver = nil
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
		s.db = nil
	}
	return errors.Join(errs...)
}

// Host is the HTTP host (tests drive it directly).
func (s *Server) Host() *platform.Host { return s.host }

// Store is the control plane's store (bbolt, or PostgreSQL with --database-url).
func (s *Server) Store() *store.DB { return s.db }

// Keys is the signing key set, nil with --signing=false.
func (s *Server) Keys() *signing.KeySet { return s.keys }
