package proxyperm

import (
	"slices"
	"time"
)

// An access token opens one container's agent to the person the control
// plane minted it for (POST /api/v1/containers/{id}/access-tokens), for a
// while, with no group of the document: the control plane signs
// `{typ:"access", container, sub, services?, iat, exp}` with the keys that
// sign its answers, and the agent's gateway admits a request to that
// container that carries it as `Authorization: Bearer` or in the
// deckhand_token cookie (the CLI's and the tunnel client's), to any
// service or only to those it names. The document's other groups, and
// its default, are untouched: the token is a grant beside them, like a
// preview link, and a disabled proxy (enable_proxy false) refuses it.

// Access token names.
const (
	// ClaimTypeAccess is the typ of an access token's payload.
	ClaimTypeAccess = "access"
	// TypeAccess is the Decision.Type of a request an access token admitted.
	TypeAccess = "access"
	// AccessCookie is the cookie the CLI and the tunnel client also send
	// their token in (a WebSocket upgrade from a browser carries no
	// Authorization header).
	AccessCookie = "deckhand_token"
)

// Access token lifetimes.
const (
	MinAccessLifetime = time.Minute
	MaxAccessLifetime = 24 * time.Hour
)

// AccessClaim is the payload of an access token.
type AccessClaim struct {
	Type      string `json:"typ"`
	Container string `json:"container"`
	// Subject is the user the token was minted for (the journal's
	// subject of what it admits).
	Subject string `json:"sub"`
	// Services, when not empty, are the only services the token opens;
	// a service that acts for its caller (mcp) reaches, for a token that
	// names it, what its tools call.
	Services []string `json:"services,omitempty"`
	IssuedAt int64    `json:"iat"`
	Expires  int64    `json:"exp"`
}

// Check reports why the token may not open service of container at now
// ("" when it may). via is the service acting for the caller when the
// request is one it makes on the caller's behalf ("" otherwise).
func (c *AccessClaim) Check(container, service, via string, now time.Time) string {
	lifetime := checkLifetime(c.IssuedAt, c.Expires, 0, MaxAccessLifetime, now)
	switch {
	case c.Type != ClaimTypeAccess:
		return "not an access token"
	case container == "" || c.Container != container:
		return "issued for another container"
	case c.Subject == "":
		return "no subject"
	case lifetime != "":
		return lifetime
	case len(c.Services) > 0 && !slices.Contains(c.Services, service) && (via == "" || !slices.Contains(c.Services, via)):
		return "not issued for service " + service
	}
	return ""
}

// access admits a request that carries a valid access token for this
// container and the service it reaches.
func (st *evalState) access() (Decision, bool) {
	f := st.f
	if st.verify == nil || f.Audience == "" {
		return Decision{}, false
	}
	bearer, _ := cutBearer(ask(f.Header, "Authorization"))
	for _, v := range []string{bearer, ask(f.Cookie, AccessCookie)} {
		// A value whose signature is not hex is not an access token (a
		// JWT for a jwt group, a token group's value): no key lookup for it.
		ac, ok := verifiedClaim[AccessClaim](st, v, true)
		if !ok || ac.Check(f.Audience, f.Service, f.Via, f.Now) != "" {
			continue
		}
		return Decision{Outcome: Allowed, Type: TypeAccess, Subject: "user:" + ac.Subject,
			Reason: "a control-plane access token"}, true
	}
	return Decision{}, false
}
