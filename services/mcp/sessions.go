package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
	"deckhand/platform/contract"
)

// What the service keeps per MCP session: the credential that opened it,
// which alone may use it, and its file subscriptions. All of it goes when
// the session ends (DELETE, --mcp-session-idle, the service's close), so
// sessions that come and go leave no watches behind.

// session is one open MCP session; subscriptions.mu guards it.
type session struct {
	owner string            // ownerKey of the credential that opened it
	uris  map[string]string // subscribed URI (as spelled) → its cleaned path
}

// ownerHeader carries a request's ownerKey from bound to the message
// handlers (RequestExtra.Header); bound sets it on every request, so a
// client's copy never counts.
const ownerHeader = "X-Deckhand-Mcp-Owner"

// ownerKey names the credential of a request: through the gateway, the
// identity it found (group, type and subject: one token, password user,
// JWT subject or address of the permissions document), hashed so the
// subject is not kept in the clear; on the service's own port, the
// trusted local user. A request with another key cannot use the session.
func ownerKey(r *http.Request) string {
	if !platform.ViaGateway(r.Context()) {
		return "local"
	}
	h := sha256.New()
	for _, k := range contract.IdentityHeaders {
		h.Write([]byte(r.Header.Get(k)))
		h.Write([]byte{0})
	}
	return "gateway:" + hex.EncodeToString(h.Sum(nil))
}

// track is the record of ss, made on first sight with a watcher that drops
// it when ss ends. u.mu is held. A session that already ended gets a new
// record whose watcher drops it at once, with anything added meanwhile.
func (u *subscriptions) track(ss *mcp.ServerSession) *session {
	id := ss.ID()
	if sess, ok := u.byID[id]; ok {
		return sess
	}
	sess := &session{uris: map[string]string{}}
	u.byID[id] = sess
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		_ = ss.Wait()
		u.end(id)
	}()
	return sess
}

// opened binds ss to the credential that sent its initialize.
func (u *subscriptions) opened(ss *mcp.ServerSession, owner string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if sess := u.track(ss); sess.owner == "" {
		sess.owner = owner
	}
}

// end drops an ended session's record and its subscriptions.
func (u *subscriptions) end(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	sess, ok := u.byID[id]
	if !ok {
		return
	}
	delete(u.byID, id)
	u.lastEnded = time.Now()
	for uri, p := range sess.uris {
		u.release(p, uri)
	}
}

// mayUse reports whether a request with owner may use session id: a
// session bound to another credential is not there for it.
func (u *subscriptions) mayUse(id, owner string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	sess, ok := u.byID[id]
	return !ok || sess.owner == "" || sess.owner == owner
}

// counts are the open sessions this service tracks, its watches and the
// subscriptions of its sessions.
func (u *subscriptions) counts() (sessions, watches, subs int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, sess := range u.byID {
		subs += len(sess.uris)
	}
	return len(u.byID), len(u.watches), subs
}
