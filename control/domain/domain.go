// Package domain fixes what a control-plane domain is built from and what
// it gives back. The server builds every domain from one list
// (control/server/domains.go); each gets one Env — the shared store,
// clock, logger, event log, authorizer and rate limiter, plus its own
// typed config section — and returns a contract.Service, its route table.
// Bootstrap (Bootstrapper) and Close (contract.Closer) are optional.
//
// A domain's code is two layers: methods that take a context.Context (the
// caller is platform.Caller(ctx), the address auth.ClientIP(ctx)) and a
// typed input, with no HTTP in them; and route handlers that decode, call
// such a method and encode. Who may call a route and how often is declared
// in the route table (Route.Policy, Route.Limits) and enforced by the host.
package domain

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"
	"deckhand/platform/store"
)

// Env is everything a domain is built from. C is the domain's own config
// section, filled by the server from its flags.
type Env[C any] struct {
	// Name is the domain's name in the server's list (logs carry it).
	Name   string
	Store  *store.DB
	Clock  clock.Clock
	Logger *slog.Logger
	// Events is the audit log; domains Append inside their own Update.
	Events *events.Log
	// Authz holds the resource checks domains offer each other.
	Authz *Authorizer
	// Payments is the balance seam: the wallet provides it, selling
	// domains charge through it inside their own transaction.
	Payments *Payments
	// Accounts is where identity answers account contacts (usernames and
	// addresses) to other domains.
	Accounts *Accounts
	// Images is where the images domain resolves a catalog image to the
	// engine's reference for other domains.
	Images *Images
	// Limiter counts rate limits: the host applies a route's IP, account
	// and credential limits; a domain applies its ByValue limits through
	// this same limiter.
	Limiter ratelimit.Limiter
	Config  C
}

// NoConfig is the config section of a domain without settings.
type NoConfig = struct{}

// WithConfig is env with another config section (the server builds every
// domain's Env from one base).
func WithConfig[C, D any](env Env[D], c C) Env[C] {
	return Env[C]{Name: env.Name, Store: env.Store, Clock: env.Clock, Logger: env.Logger, Events: env.Events,
		Authz: env.Authz, Payments: env.Payments, Accounts: env.Accounts, Images: env.Images, Limiter: env.Limiter, Config: c}
}

// Transact runs fn in a transaction of run (DB.ViewContext or
// DB.UpdateContext) and answers what fn answers; a failure is op's
// (fault.Wrap).
func Transact[T any](ctx context.Context, run func(context.Context, func(*store.Tx) error) error, op string,
	fn func(tx *store.Tx) (T, error)) (T, error) {
	var out T
	err := run(ctx, func(tx *store.Tx) (err error) {
		out, err = fn(tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, fault.Wrap(op, err)
	}
	return out, nil
}

// CredentialIssuer is implemented by a domain that issues Bearer
// credentials of its own, told apart by a prefix (projects: agt_ agent
// tokens), besides the identity domain's sessions and svc_ tokens. The
// server resolves every credential with that prefix here; the identity
// domain never sees it. ResolveCredential answers 401 (a *fault.Error)
// for an unknown or revoked credential.
type CredentialIssuer interface {
	CredentialPrefix() string
	ResolveCredential(ctx context.Context, credential string) (*auth.Principal, error)
}

// Bootstrapper is implemented by domains that prepare state (indexes,
// migrations, seed records) before the server accepts requests.
type Bootstrapper interface {
	Bootstrap(ctx context.Context) error
}

// Authorizer is where domains offer resource checks to each other: the
// projects domain provides "project.member", and the containers domain's
// routes declare Authz.Policy("project.member", ...) without importing
// projects. A policy naming a check nobody provides fails the server's
// start (Missing), not a request.
type Authorizer struct {
	mu       sync.RWMutex
	checks   map[string]platform.Check
	required map[string]bool
}

// NewAuthorizer returns an empty authorizer.
func NewAuthorizer() *Authorizer {
	return &Authorizer{checks: map[string]platform.Check{}, required: map[string]bool{}}
}

// Provide registers the check behind name.
func (a *Authorizer) Provide(name string, check platform.Check) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.checks[name]; dup {
		panic("domain: resource check provided twice: " + name)
	}
	a.checks[name] = check
}

// Policy is the resource policy of the check named name, whoever provides
// it; doc says in words who passes.
func (a *Authorizer) Policy(name, doc string) platform.Policy {
	a.mu.Lock()
	a.required[name] = true
	a.mu.Unlock()
	return platform.Resource(name, doc, func(ctx context.Context, param func(string) string) error {
		a.mu.RLock()
		check := a.checks[name]
		a.mu.RUnlock()
		if check == nil {
			return fault.Internal("authorize the request", errMissing(name))
		}
		return check(ctx, param)
	})
}

// Lookup is the check behind name, nil when no domain provides it. Unlike
// Policy it makes nothing required: a domain that can do without the check
// (the event log widens what a user sees by project membership when the
// projects domain is built) asks here at request time.
func (a *Authorizer) Lookup(name string) platform.Check {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.checks[name]
}

// Missing lists checks some policy requires and no domain provides.
func (a *Authorizer) Missing() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []string
	for n := range a.required {
		if a.checks[n] == nil {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

type errMissing string

func (e errMissing) Error() string { return "no domain provides resource check " + string(e) }
