package proxyperm

import (
	"strconv"
	"time"
)

// A preview token lets whoever holds the link open one port of one
// container for a while, without a group of the document: the control
// plane signs `{typ:"preview", container, port, iat, exp}` with the keys
// that sign its answers (POST /api/v1/containers/{id}/previews), and the
// agent's gateway admits a request for exactly that container and port
// (program http) while it lasts. It travels once in the query, then in a
// cookie the gateway sets for that host alone.

// Preview token names.
const (
	// PreviewParam is the query parameter a preview link carries.
	PreviewParam = "deckhand_preview"
	// PreviewCookie is the host-only cookie the gateway sets from it.
	PreviewCookie = "deckhand_preview"
	// ClaimTypePreview is the typ of a preview token's payload.
	ClaimTypePreview = "preview"
	// TypePreview is the Decision.Type of a request a preview admitted.
	TypePreview = "preview"
)

// Preview lifetimes.
const (
	MinPreviewLifetime = time.Minute
	MaxPreviewLifetime = 7 * 24 * time.Hour
)

// PreviewClaim is the payload of a preview token.
type PreviewClaim struct {
	Type      string `json:"typ"`
	Container string `json:"container"`
	Port      int    `json:"port"`
	IssuedAt  int64  `json:"iat"`
	Expires   int64  `json:"exp"`
}

// Check reports why the token may not open port of container at now
// ("" when it may).
func (c *PreviewClaim) Check(container string, port int, now time.Time) string {
	switch {
	case c.Type != ClaimTypePreview:
		return "not a preview token"
	case container == "" || c.Container != container:
		return "issued for another container"
	case port == 0 || c.Port != port:
		return "issued for another port"
	}
	return checkLifetime(c.IssuedAt, c.Expires, 0, MaxPreviewLifetime, now)
}

// preview admits a request for a port preview that carries a valid
// preview token for this container and port, in the query or the cookie.
func (st *evalState) preview() (Decision, bool) {
	f := st.f
	if f.Program != ProgramHTTP || f.Port == 0 || st.verify == nil || f.Audience == "" {
		return Decision{}, false
	}
	for _, v := range []string{ask(f.Param, PreviewParam), ask(f.Cookie, PreviewCookie)} {
		pc, ok := verifiedClaim[PreviewClaim](st, v, false)
		if !ok || pc.Check(f.Audience, f.Port, f.Now) != "" {
			continue
		}
		return Decision{Outcome: Allowed, Type: TypePreview, Subject: "port " + strconv.Itoa(f.Port),
			Reason: "a preview token for port " + strconv.Itoa(f.Port)}, true
	}
	return Decision{}, false
}
