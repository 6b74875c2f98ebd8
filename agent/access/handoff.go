package access

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"deckhand/platform/atomicfile"
	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
	"deckhand/platform/tokenseal"
)

// The identity hand-over. An agent of the control plane's warm pool runs
// with a token of the pool and no project. The create that claims it
// mints the container's own token and posts it to the agent's gateway
// (tokenseal.Path), sealed under the pool token's hash and the container's
// id: only this agent, which holds the pool token, opens it. The agent
// writes the new token over its token file, puts it in force for every
// sync, and syncs once with it before it answers, so when the control
// plane hears 200 the agent has enrolled with its own token and the
// project's proxy permissions document is in force: the container's first
// request is served as any running container's.
//
// The sealed token crosses the network between control plane and agent,
// the network the agent's every request to the control plane carries its
// token over in the clear when the control URL is http; sealed, it is
// read by nobody who did not know the pool token already. An agent with a
// project (never pooled) takes no hand-over, and one takes one at most.

// handoffTimeout bounds the hand-over's sync with the new token.
const handoffTimeout = 5 * time.Second

type handoffState struct {
	mu   sync.Mutex
	done bool
}

// IdentityHandler answers tokenseal.Path; nil when the agent has no
// control plane.
func (a *Authorizer) IdentityHandler() http.Handler {
	if a.control == nil {
		return nil
	}
	return http.HandlerFunc(a.serveIdentity)
}

func (a *Authorizer) serveIdentity(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		reqpolicy.WriteHTTPError(w, &fault.Error{Code: fault.CodeMethodNotAllowed, Message: "method not allowed on this route", Details: "identity"})
		return
	}
	if err := a.takeIdentity(r.Context(), r.Body); err != nil {
		a.cfg.Logger.Warn("identity hand-over refused", "err", err)
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// takeIdentity opens the sealed token in body, puts it in force and
// syncs with it.
func (a *Authorizer) takeIdentity(ctx context.Context, body io.Reader) error {
	if a.cfg.ProjectID != "" {
		return &fault.Error{Code: fault.CodeNotFound, Message: "this agent belongs to a project: it takes no identity hand-over", Details: "identity"}
	}
	var s tokenseal.Sealed
	dec := json.NewDecoder(io.LimitReader(body, 4096))
	if err := dec.Decode(&s); err != nil {
		return fault.Invalid("body", "must be a sealed hand-over (JSON: container_id, nonce, sealed): %v", err)
	}
	a.handoff.mu.Lock()
	defer a.handoff.mu.Unlock()
	if a.handoff.done {
		return &fault.Error{Code: fault.CodeConflict, Message: "this agent has taken its identity already", Details: "identity"}
	}
	tok, err := a.control.adopt(s)
	if err != nil {
		return err
	}
	a.handoff.done = true
	// The file is written while the agent syncs (its fsyncs cost as much
	// as the sync on a busy disk); the answer waits for both.
	written := make(chan error, 1)
	go func() { written <- a.control.writeToken(tok) }()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handoffTimeout)
	defer cancel()
	serr := a.SyncOnce(ctx)
	if err := <-written; err != nil {
		return &fault.Error{Code: fault.CodeInternal, Message: "the new token is in force, but writing the token file failed: " + err.Error(), Details: "identity"}
	}
	if serr != nil {
		return &fault.Error{Code: fault.CodeBackend, Message: "the new token is in force, but the sync with it failed: " + serr.Error(), Details: "identity"}
	}
	return nil
}

// adopt opens s with the token in force and puts the new token in force:
// the new token.
func (c *Control) adopt(s tokenseal.Sealed) (string, error) {
	c.credential().mu.Lock()
	defer c.cred.mu.Unlock()
	tok, err := tokenseal.Open(c.cred.token, c.ContainerID, s)
	if errors.Is(err, tokenseal.ErrNotOpened) {
		return "", &fault.Error{Code: fault.CodeForbidden, Message: err.Error(), Details: "identity"}
	}
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(tok, AgentTokenPrefix) || strings.ContainsAny(tok, " \t\r\n") || len(tok) > 128 {
		return "", fault.Invalid("sealed", "does not hold an agent token")
	}
	c.cred.token = tok
	return tok, nil
}

// writeToken writes tok over the token file (none without one), so an
// agent restarted later reads the token in force.
func (c *Control) writeToken(tok string) error {
	if c.TokenFile == "" {
		return nil
	}
	return atomicfile.Write(c.TokenFile, []byte(tok+"\n"), 0o400)
}
