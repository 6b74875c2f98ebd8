// Package auth carries who acts, and from where, in a context.Context: the
// host puts the caller there before a handler runs, so domain code with no
// HTTP in it asks FromContext instead of reading request headers. It owns
// nothing else: credentials are checked by the identity domain, policies
// are enforced by the host (platform.Policy).
package auth

import "context"

// Roles of a principal.
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
)

// Credential kinds.
const (
	KindSession = "session" // a session JWT from login
	KindToken   = "token"   // an svc_ auth token
	// KindAgent is a container's agent token (agt_): it acts for no user,
	// only for its container's agent, and passes only routes whose policy
	// takes agents (platform.Policy.Agents).
	KindAgent = "agent"
)

// Principal is who a request acts for.
type Principal struct {
	UserID string
	Role   string
	// Kind is KindSession or KindToken.
	Kind      string
	SessionID string // Kind session
	TokenID   string // Kind token and agent
	// ContainerID is the container an agent token is bound to (Kind agent).
	ContainerID string
}

// IsAdmin reports whether the principal has the admin role.
func (p *Principal) IsAdmin() bool { return p != nil && p.Role == RoleAdmin }

// CredentialID is the session or token id: what a per-credential rate
// limit counts.
func (p *Principal) CredentialID() string {
	if p.Kind == KindToken || p.Kind == KindAgent {
		return p.TokenID
	}
	return p.SessionID
}

type principalKey struct{}

type ipKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal ctx carries (nil, false on a public
// route or outside a request).
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}

// WithClientIP returns ctx carrying the caller's address (the host puts it
// there: the socket peer, or the trusted proxy's view of it).
func WithClientIP(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, ipKey{}, ip)
}

// ClientIP is the caller's address ctx carries, "" outside a request.
func ClientIP(ctx context.Context) string {
	s, _ := ctx.Value(ipKey{}).(string)
	return s
}
