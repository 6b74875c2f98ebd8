// Package server owns the assembly of the control plane: it opens the
// store (bbolt, or PostgreSQL with --database-url: storage.go), the signing
// keys and the event log, builds every domain (meta, identity, ...), wraps
// each non-public route with the authenticator, and serves them on one
// platform.Host whose every response is signed.
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
	"time"

	"deckhand/control/events"
	"deckhand/control/meta"
	"deckhand/platform"
	"deckhand/platform/config"
	"deckhand/platform/secrets"
	"deckhand/platform/signing"
	"deckhand/platform/store"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
)

// Authenticator checks the credential of a request to a non-public route.
// It returns a *platform.Error (401, 403, 429 ...) to refuse, or nil after
// putting the caller into c.Locals for the handler.
type Authenticator interface {
	Authenticate(c fiber.Ctx) error
}

// Domain is one control-plane capability: a route table.
type Domain interface {
	Routes() []platform.Route
}

// Bootstrapper is implemented by domains that prepare state at start
// (buckets, indexes, migrations) before the server accepts requests.
type Bootstrapper interface {
	Bootstrap(ctx context.Context) error
}

// AdminEnsurer creates the bootstrap admin of --admin-email/--admin-password.
type AdminEnsurer interface {
	EnsureAdmin(email, password string) (created bool, err error)
}

// Closer is implemented by domains holding resources (mail senders, timers).
type Closer interface {
	Close() error
}

// Option adds to what New assembles (tests, later composition).
type Option func(*Server)

// WithDomain adds a domain next to the built-in ones.
func WithDomain(d Domain) Option { return func(s *Server) { s.extra = append(s.extra, d) } }

// WithAuthenticator replaces the identity domain's authenticator (tests of
// the guard itself).
func WithAuthenticator(a Authenticator) Option { return func(s *Server) { s.authOverride = a } }

// Server is an assembled control plane.
type Server struct {
	cfg          Config
	log          *slog.Logger
	clock        platform.Clock
	out          io.Writer
	db           *store.DB
	sealer       *secrets.Sealer // secrets at rest, under --master-key-file
	keys         *signing.KeySet // nil with --signing=false
	signer       *signing.Signer // nil with --signing=false
	events       *events.Log
	regions      []meta.Region
	auth         Authenticator
	authOverride Authenticator
	admin        AdminEnsurer
	domains      []Domain
	extra        []Domain
	host         *platform.Host
	ln           net.Listener
	stopWatch    func() // ends the signing-key watch (storage.go)
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
		s.clock = platform.SystemClock{}
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

	regionsFile, optional := cfg.RegionsFile, false
	if regionsFile == "" {
		regionsFile, optional = filepath.Join(cfg.Data, "regions.json"), true
	}
	if s.regions, err = meta.LoadRegions(regionsFile, optional); err != nil {
		return nil, err
	}

	s.domains = append(s.domains, meta.New(meta.Deps{Regions: s.regions, Keys: s.keys}))
	if err = s.buildIdentity(); err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	if s.authOverride != nil {
		s.auth = s.authOverride
	}
	s.domains = append(s.domains, s.extra...)

	var tables [][]platform.Route
	for _, d := range s.domains {
		tables = append(tables, s.guard(d.Routes()))
	}
	hc := platform.HostConfig{
		Info: platform.Info{Name: "control", Title: "deckhand control plane", Version: platform.Version,
			Description: "Accounts, sessions, signing keys and the platform resources of deckhand. " +
				"Every response carries X-Service-Signature (ED25519 over `<t>.<body>`, keys at " +
				signing.PublicKeyPath + "); errors are `{statusCode, error, message}` envelopes."},
		Style:  platform.EnvelopeErrors,
		Logger: s.log,
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

var errNoAuthenticator = platform.Errorf(platform.CodeUnauthorized, "Authentication required")

// guard wraps every non-public route's handler with the authenticator, so
// no domain can forget it. Without an authenticator such routes answer 401.
func (s *Server) guard(routes []platform.Route) []platform.Route {
	out := make([]platform.Route, len(routes))
	for i, r := range routes {
		if !r.Public {
			h := r.Handler
			if h == nil && r.HTTP != nil {
				h = adaptor.HTTPHandler(r.HTTP)
				r.HTTP = nil
			}
			auth := s.auth
			r.Handler = func(c fiber.Ctx) error {
				if auth == nil {
					return errNoAuthenticator
				}
				if err := auth.Authenticate(c); err != nil {
					return err
				}
				return h(c)
			}
		}
		out[i] = r
	}
	return out
}

// Bootstrap runs each domain's Bootstrap and the admin bootstrap.
func (s *Server) Bootstrap(ctx context.Context) error {
	for _, d := range s.domains {
		if b, ok := d.(Bootstrapper); ok {
			if err := b.Bootstrap(ctx); err != nil {
				return err
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
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	if s.cfg.PublicURL == "" {
		s.cfg.PublicURL = "http://" + ln.Addr().String()
	}
	return nil
}

// Addr is the bound API address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

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
	errc := make(chan error, 1)
	go func() { errc <- s.host.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.host.Shutdown(sctx)
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
		if c, ok := d.(Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	if s.ln != nil {
		_ = s.ln.Close() // already closed after a served Run
		s.ln = nil
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
		s.db = nil
	}
	return errors.Join(errs...)
}

// Host is the HTTP host (tests drive it directly).
func (s *Server) Host() *platform.Host { return s.host }

// Config is the validated configuration.
func (s *Server) Config() Config { return s.cfg }

// Store is the control plane's store (bbolt, or PostgreSQL with --database-url).
func (s *Server) Store() *store.DB { return s.db }

// Keys is the signing key set, nil with --signing=false.
func (s *Server) Keys() *signing.KeySet { return s.keys }

// Events is the event log.
func (s *Server) Events() *events.Log { return s.events }
