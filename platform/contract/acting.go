package contract

import (
	"net/http"
	"slices"
	"strings"

	"deckhand/platform"
)

// allServices marks, in ReachHeader, a caller that did not come through
// the gateway: a trusted local user on the acting service's own port.
const allServices = "*"

// MarkLocal sets ReachHeader on a request to a service that acts for its
// caller when the gateway did not: the gateway sets it on every request
// it sends such a service, so a request without it is a local caller on
// the service's own port, whom the host let in only as a trusted local
// user (root, the agent's own, --trusted-uids), and who reaches every
// service with no tool allow-list (ToolsHeader is dropped).
func MarkLocal(r *http.Request) {
	if _, set := r.Header[http.CanonicalHeaderKey(ReachHeader)]; !set || !platform.ViaGateway(r.Context()) {
		r.Header.Set(ReachHeader, allServices)
		r.Header.Del(ToolsHeader)
	}
}

// Acting is the caller of a service that acts for it on others, as the
// gateway's headers name it (after MarkLocal).
type Acting struct {
	// Reach is the services the caller may reach; nil: every one.
	Reach []string
	// Tools is the tool allow-list (ToolsHeader); nil: none.
	Tools []string
	// Header holds the identity headers.
	Header http.Header
}

// ActingOf reads the caller from a request's header.
func ActingOf(h http.Header) Acting {
	a := Acting{Header: h, Reach: []string{}}
	if _, listed := h[http.CanonicalHeaderKey(ToolsHeader)]; listed {
		a.Tools = CommaList(h.Get(ToolsHeader)) // an empty list allows nothing
	}
	if v := strings.TrimSpace(h.Get(ReachHeader)); v == allServices {
		a.Reach = nil
	} else {
		a.Reach = CommaList(v)
	}
	return a
}

// CommaList splits a comma list (a header's, a flag's), never nil.
func CommaList(v string) []string {
	out := []string{}
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// May reports whether the caller may reach service.
func (a Acting) May(service string) bool {
	return a.Reach == nil || slices.Contains(a.Reach, service)
}

// MayUse reports whether the caller's tool allow-list, if it has one,
// names tool: equal to a name, or starting with the prefix of a pattern
// ending in '*' ("*" alone names every tool).
func (a Acting) MayUse(tool string) bool {
	if a.Tools == nil {
		return true
	}
	for _, p := range a.Tools {
		if prefix, glob := strings.CutSuffix(p, "*"); glob && strings.HasPrefix(tool, prefix) || p == tool {
			return true
		}
	}
	return false
}

// Forward is h with the caller's identity headers added, to hand them on
// to the service the caller acts on.
func (a Acting) Forward(h http.Header) http.Header {
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	for _, k := range IdentityHeaders {
		if v := a.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	return h
}

// Fields name the caller in a journal entry.
func (a Acting) Fields() map[string]any {
	out := map[string]any{}
	for _, k := range IdentityHeaders {
		if v := a.Header.Get(k); v != "" {
			out[strings.ToLower(strings.TrimPrefix(k, IdentityHeaderPrefix))] = v
		}
	}
	return out
}
