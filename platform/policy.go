package platform

import (
	"context"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform/auth"
	"deckhand/platform/fault"
)

// Access is who may call a route before any resource check.
type Access uint8

const (
	// AccessDefault is the zero value: signed-in on a host with an
	// Authenticator (the control plane: a route that forgets its policy is
	// closed, not open), unchecked on container hosts, which have no
	// credentials of their own (the gateway's proxy permissions guard them).
	AccessDefault Access = iota
	// AccessPublic needs no credential.
	AccessPublic
	// AccessSignedIn needs any valid credential.
	AccessSignedIn
	// AccessAdmin needs a credential of a user with the admin role.
	AccessAdmin
)

// Check decides a resource policy once the caller is known: ctx carries
// the principal (auth.FromContext) and param reads the route's path
// parameters by name. It returns a *Error (usually FORBIDDEN or NOT_FOUND)
// to refuse. Domains implement checks ("owner or permitted user of this
// project") without touching HTTP.
type Check func(ctx context.Context, param func(name string) string) error

// Policy says who may call a route. The host enforces it before the
// handler runs and the OpenAPI document shows it (security and x-policy).
type Policy struct {
	Access Access
	// Name and Check make a resource policy: Name is what x-policy shows
	// ("project.member"), Doc says in words who passes.
	Name  string
	Doc   string
	Check Check
	// Agents admits a container agent's credential (auth.KindAgent) to the
	// route; its Check then decides which container's. Every other route
	// answers such a credential 401: an agent token is good for nothing a
	// person does.
	Agents bool
}

// The plain policies.
var (
	Public   = Policy{Access: AccessPublic}
	SignedIn = Policy{Access: AccessSignedIn}
	Admin    = Policy{Access: AccessAdmin}
)

// Resource is the policy of a signed-in caller whom check admits.
func Resource(name, doc string, check Check) Policy {
	return Policy{Access: AccessSignedIn, Name: name, Doc: doc, Check: check}
}

// IsPublic reports whether the policy needs no credential.
func (p Policy) IsPublic() bool { return p.Access == AccessPublic }

// Label is the policy as x-policy shows it: public, signed-in, admin or
// the resource check's name.
func (p Policy) Label() string {
	switch {
	case p.Name != "":
		return p.Name
	case p.Access == AccessPublic:
		return "public"
	case p.Access == AccessAdmin:
		return "admin"
	}
	return "signed-in"
}

// Authenticator resolves a request's credential into the principal it acts
// for; it returns a *Error (401 for a missing or bad credential, 403 for a
// banned account) to refuse.
type Authenticator interface {
	Authenticate(c fiber.Ctx) (*auth.Principal, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(c fiber.Ctx) (*auth.Principal, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(c fiber.Ctx) (*auth.Principal, error) { return f(c) }

var (
	errAdminOnly = &fault.Error{Code: fault.CodeForbidden, Message: "this action needs the admin role"}
	errNoCaller  = &fault.Error{Code: fault.CodeUnauthorized, Message: "missing credential: send an Authorization: Bearer header"}
	errAgentOnly = &fault.Error{Code: fault.CodeUnauthorized,
		Message: "an agent token is good only for its container's agent routes: sign in or send an auth token"}
)

// BearerToken is the request's Authorization: Bearer credential.
func BearerToken(c fiber.Ctx) (string, bool) { return BearerOf(c.Get(fiber.HeaderAuthorization)) }

// BearerOf is the token of an Authorization header value "Bearer <token>"
// (an input's header:"Authorization" field).
func BearerOf(h string) (string, bool) {
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	tok := strings.TrimSpace(h[7:])
	return tok, tok != ""
}

// Caller is the principal ctx carries, or 401 when there is none: domain
// methods that act for someone start with it.
func Caller(ctx context.Context) (*auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, errNoCaller
	}
	return p, nil
}

// AdminCaller is Caller that also demands the admin role (403 otherwise).
func AdminCaller(ctx context.Context) (*auth.Principal, error) {
	p, err := Caller(ctx)
	if err != nil {
		return nil, err
	}
	if !p.IsAdmin() {
		return nil, errAdminOnly
	}
	return p, nil
}

// callerCtxKey keeps the request's context.Context (principal and client
// IP) as a fasthttp user value, so net/http routes see it too.
type callerCtxKey struct{}

// withCallerContext hands a net/http route the request's context.Context
// the guard built (principal, client IP) on top of its own.
func withCallerContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ctx, ok := r.Context().Value(callerCtxKey{}).(context.Context); ok {
			rc := auth.WithClientIP(r.Context(), auth.ClientIP(ctx))
			if p, ok := auth.FromContext(ctx); ok {
				rc = auth.NewContext(rc, p)
			}
			r = r.WithContext(rc)
		}
		next.ServeHTTP(w, r)
	})
}
