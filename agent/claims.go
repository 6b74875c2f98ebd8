package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"deckhand/agent/access"
	"deckhand/platform/fault"
	"deckhand/platform/proxyperm"
	"deckhand/platform/reqpolicy"
	"deckhand/platform/signing"
)

// claimRefresh is how long before its expiry a cached claim is replaced.
const claimRefresh = time.Minute

// Claim is what GET /_agent/claim answers: the control plane's claim and
// the header to send it in.
type Claim struct {
	signing.IssuedClaim
	Header string `json:"header"`
}

// claims hands programs in the container the container's claim for
// another container's gateway, minted by the control plane for the
// agent's token and verified like every answer of it; one per audience is
// kept until a minute before it expires.
type claims struct {
	control *access.Control
	mu      sync.Mutex
	cache   map[string]*Claim
}

func newClaims(c *access.Control) *claims { return &claims{control: c, cache: map[string]*Claim{}} }

func (c *claims) get(ctx context.Context, aud string) (*Claim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.cache[aud]; ok && time.Until(cl.ExpiresAt) > claimRefresh {
		return cl, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	path := "/api/v1/containers/" + url.PathEscape(c.control.ContainerID) + "/claims"
	status, body, err := c.control.Post(ctx, path, map[string]any{"aud": aud}, 64<<10)
	if err != nil {
		return nil, &fault.Error{Code: fault.CodeUnavailable, Message: "the control plane did not give a claim: " + err.Error(), Details: "control plane"}
	}
	if status != http.StatusOK {
		var env struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &env)
		code := fault.CodeBackend
		if status == http.StatusBadRequest {
			code = fault.CodeInvalid
		}
		return nil, &fault.Error{Code: code, Message: fmt.Sprintf("the control plane refused the claim (%d): %s", status, env.Message), Details: "aud"}
	}
	data, err := access.Data(body)
	if err != nil {
		return nil, &fault.Error{Code: fault.CodeBackend, Message: err.Error()}
	}
	var cl Claim
	if err := json.Unmarshal(data, &cl.IssuedClaim); err != nil || cl.Value == "" {
		return nil, &fault.Error{Code: fault.CodeBackend, Message: "the control plane's claim does not decode"}
	}
	// The claim must verify against the same keys the gateways use.
	var payload proxyperm.ContainerClaim
	if err := c.control.VerifyClaim(ctx, cl.Claim, &payload); err != nil || payload.Container != c.control.ContainerID || payload.Audience != aud {
		return nil, &fault.Error{Code: fault.CodeBackend, Message: "the control plane's claim does not verify for this container and audience"}
	}
	cl.Header = proxyperm.ClaimHeader
	c.cache[aud] = &cl
	return &cl, nil
}

func (c *claims) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	aud := r.URL.Query().Get("aud")
	if aud == "" {
		reqpolicy.WriteHTTPError(w, fault.Invalid("aud", "is required: the id of the container whose gateway the claim is for"))
		return
	}
	if n := len(aud); n > 64 {
		reqpolicy.WriteHTTPError(w, fault.Invalid("aud", "must be at most 64 bytes, got %d", n))
		return
	}
	cl, err := c.get(r.Context(), aud)
	if err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(cl)
}

// claimHandler is the gateway's ClaimPath (nil without a control plane).
// identityHandler answers the control plane's hand-over of a claimed pool
// container's token (agent/access: handoff.go); nil without one.
func (s *Supervisor) identityHandler() http.Handler {
	if s.access == nil {
		return nil
	}
	return s.access.IdentityHandler()
}

func (s *Supervisor) claimHandler() http.Handler {
	if s.access == nil || s.access.Control() == nil {
		return nil
	}
	return newClaims(s.access.Control())
}
