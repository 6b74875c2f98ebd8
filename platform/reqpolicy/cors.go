package reqpolicy

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"
)

// CORS is the cross-origin answer RequestPolicy.Decide gives a request it
// let through. The policy is the only place that decides which origins may
// call; this makes a browser honour that decision: without these headers a
// page on an allowed foreign origin could send simple requests but never
// read an answer, and could not send JSON, Authorization or PUT at all (the
// preflight went unanswered).
//
// Choices (docs/design/request-policy.md):
//   - Only an origin listed in --allowed-origins gets headers; a page
//     reads its own origin's answers without them, and an origin allowed
//     only by being under --domain gets none (a tunnelled app is served
//     there and must not read the other services). The origin is echoed
//     exactly, never "*", with Vary: Origin.
//   - Credentials are allowed: the operator named each such origin, and
//     the gateway's token cookie is how a browser authenticates.
//   - Requested headers are echoed when every name is a valid token; the
//     headers a proxy owns (Forwarded, X-Forwarded-*, X-Real-Ip,
//     X-Deckhand-Identity-*) never are, so a page cannot speak for the
//     gateway on a service's own port. Echoing, not a fixed list, because
//     a proxy permissions document may name any header as a token's
//     location.
//   - A preflight is answered for any path, before routing and before
//     authorization (it carries no credentials); what it allows is
//     decided again, with credentials, on the real request.
type CORS struct {
	// Origin is the origin as the request sent it; "" means no CORS
	// headers (no Origin, the request's own, or one not listed).
	Origin string
	// Preflight: an OPTIONS with Origin and Access-Control-Request-Method,
	// answered by WritePreflight and never routed.
	Preflight bool
	// AllowHeaders is the echo of the preflight's requested headers.
	AllowHeaders string
	// PrivateNetwork: the preflight asked for Private Network Access.
	PrivateNetwork bool
}

// BrowserPolicyDoc is what a service's OpenAPI document says about calls
// from web pages (the request policy and its CORS answers).
const BrowserPolicyDoc = "Browsers: a request whose Host is not this machine's, under --domain or of --allowed-origins gets 421 " +
	"MISDIRECTED_REQUEST; one carrying an Origin other than its own, one under --domain or one of --allowed-origins gets 403 " +
	"FORBIDDEN, before any route. An origin of --allowed-origins gets CORS headers on every answer, errors included " +
	"(Access-Control-Allow-Origin: that origin, never *; Access-Control-Allow-Credentials: true; Vary: Origin; " +
	"Access-Control-Expose-Headers naming the headers this API sets). A CORS preflight (OPTIONS with Origin and " +
	"Access-Control-Request-Method) from such an origin is answered 204 on any path, before routing and authentication: " +
	"methods " + CORSAllowMethods + ", the requested headers echoed (never Forwarded, X-Forwarded-*, X-Real-Ip or " +
	"X-Deckhand-Identity-*), Access-Control-Max-Age " + CORSMaxAge + " and, when asked, Access-Control-Allow-Private-Network: true. " +
	"Origins allowed only by being under --domain get no CORS headers (a tunnelled app is served there)."

// CORS constants of the answers.
const (
	// CORSAllowMethods are the methods a preflight allows: every method of
	// the services' REST routes (WebDAV's are for WebDAV clients, not pages).
	CORSAllowMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
	// CORSMaxAge is how long (seconds) a browser may cache a preflight.
	CORSMaxAge = "600"
	// maxRequestedHeaders bounds the echo (browsers send a handful).
	maxRequestedHeaders = 64
)

// CORSExposeHeaders are the response headers a cross-origin page may read
// beyond the CORS-safelisted ones (Cache-Control, Content-Language,
// Content-Length, Content-Type, Expires, Last-Modified, Pragma): every
// header a service sets for its clients (platform_test checks the
// services' sources against this list).
var CORSExposeHeaders = []string{
	"X-Request-Id", "X-Service-Signature", "Retry-After", "ETag", "Location", "Content-Disposition",
	"Content-Range", "Accept-Ranges", "Content-Encoding", "Upload-Offset", "Lock-Token",
	"X-Journal-Cursor", "X-Journal-Gap",
	"X-Terminal-Offset", "X-Terminal-Next", "X-Terminal-Truncated", "X-Terminal-Screen-Exact",
	"X-Image-Width", "X-Image-Height",
}

var corsExpose = strings.Join(CORSExposeHeaders, ", ")

// corsFor is the answer to a request whose Origin the policy allowed:
// same is the request's own origin, listed one of --allowed-origins.
func corsFor(r Request, same, listed bool) CORS {
	preflight := r.Method == http.MethodOptions && r.PreflightMethod != ""
	if !listed && (!same || !preflight) {
		return CORS{} // own origin: none needed; only under --domain: none given
	}
	c := CORS{Origin: r.Origin, Preflight: preflight}
	if preflight {
		c.AllowHeaders = echoHeaders(r.PreflightHeaders)
		c.PrivateNetwork = r.PreflightPrivateNetwork
	}
	return c
}

// echoHeaders is the requested header list as it may be allowed: "" when
// any name is not a token (or there are too many), else the names minus
// the ones a proxy owns (the browser then refuses the request, as it
// should).
func echoHeaders(list string) string {
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if len(name) > 128 || !httpguts.ValidHeaderFieldName(name) || len(out) == maxRequestedHeaders {
			return ""
		}
		if !proxyOwned(name) {
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}

// proxyOwned are request headers only the gateway (or a trusted proxy)
// may set; a service on its own port trusts them from a loopback peer.
func proxyOwned(name string) bool {
	n := strings.ToLower(name)
	return n == "forwarded" || n == "x-real-ip" || strings.HasPrefix(n, "x-forwarded-") ||
		strings.HasPrefix(n, "x-deckhand-identity-")
}

// Apply sets the headers of an actual (not preflight) response: Allow-
// Origin, Allow-Credentials, Expose-Headers, and Origin added to Vary.
// It replaces any CORS headers already there, so applying twice (the
// service, then the gateway) gives one set.
func (c CORS) Apply(h *fasthttp.ResponseHeader) {
	if c.Origin == "" {
		return
	}
	setOnly(h, fiber.HeaderAccessControlAllowOrigin, c.Origin)
	setOnly(h, fiber.HeaderAccessControlAllowCredentials, "true")
	setOnly(h, fiber.HeaderAccessControlExposeHeaders, corsExpose)
	addVary(h, fiber.HeaderOrigin)
}

// WritePreflight answers a preflight: 204, no body.
func (c CORS) WritePreflight(resp *fasthttp.Response) {
	resp.ResetBody()
	resp.SetStatusCode(http.StatusNoContent)
	h := &resp.Header
	h.Set(fiber.HeaderAccessControlAllowOrigin, c.Origin)
	h.Set(fiber.HeaderAccessControlAllowCredentials, "true")
	h.Set(fiber.HeaderAccessControlAllowMethods, CORSAllowMethods)
	if c.AllowHeaders != "" {
		h.Set(fiber.HeaderAccessControlAllowHeaders, c.AllowHeaders)
	}
	if c.PrivateNetwork {
		h.Set(fiber.HeaderAccessControlAllowPrivateNetwork, "true")
	}
	h.Set(fiber.HeaderAccessControlMaxAge, CORSMaxAge)
	addVary(h, fiber.HeaderOrigin, fiber.HeaderAccessControlRequestMethod, fiber.HeaderAccessControlRequestHeaders,
		fiber.HeaderAccessControlRequestPrivateNetwork)
}

// addVary adds names to the response's Vary (every Vary line joined into
// one), keeping what is there and adding none twice.
func addVary(h *fasthttp.ResponseHeader, names ...string) {
	var have []string
	for _, v := range h.PeekAll(fiber.HeaderVary) {
		for _, tok := range strings.Split(string(v), ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				have = append(have, tok)
			}
		}
	}
	out := have
	for _, n := range names {
		found := false
		for _, t := range have {
			if t == "*" || strings.EqualFold(t, n) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, n)
		}
	}
	setOnly(h, fiber.HeaderVary, strings.Join(out, ", "))
}

// setOnly leaves one line of k (fasthttp's Set replaces only the first:
// a net/http handler's headers arrive by Add).
func setOnly(h *fasthttp.ResponseHeader, k, v string) {
	h.Del(k)
	h.Set(k, v)
}
