package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
	"deckhand/platform/contract"
)

// owners are the open sessions and the credential that opened each, which
// alone may use it. A session's record goes when it ends (DELETE, the
// idle timeout, the server's close), and ended is told, so that sessions
// that come and go leave nothing behind.
type owners struct {
	ended func(id string) // nil: nobody to tell
	busy  string          // the Activity name of an open session
	mu    sync.Mutex
	byID  map[string]string // session id → ownerKey ("" until its initialize)
	// lastEnded is when the last session ended (Activity).
	lastEnded time.Time
	wg        sync.WaitGroup
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

// track makes sure o knows of ss, so that ended is told when it ends,
// even when it has ended already.
func (o *owners) track(ss *mcp.ServerSession) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.trackLocked(ss)
}

// trackLocked is track with o.mu held. A session seen first gets a
// watcher that drops its record when it ends; one that already ended gets
// a record the watcher drops at once.
func (o *owners) trackLocked(ss *mcp.ServerSession) {
	id := ss.ID()
	if _, ok := o.byID[id]; ok {
		return
	}
	o.byID[id] = ""
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		_ = ss.Wait()
		o.mu.Lock()
		delete(o.byID, id)
		o.lastEnded = time.Now()
		o.mu.Unlock()
		if o.ended != nil {
			o.ended(id)
		}
	}()
}

// opened binds ss to the credential that sent its initialize.
func (o *owners) opened(ss *mcp.ServerSession, owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.trackLocked(ss)
	if o.byID[ss.ID()] == "" {
		o.byID[ss.ID()] = owner
	}
}

// mayUse reports whether a request with owner may use session id: a
// session bound to another credential is not there for it.
func (o *owners) mayUse(id, owner string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	got, ok := o.byID[id]
	return !ok || got == "" || got == owner
}

// open is the number of open sessions o knows of.
func (o *owners) open() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.byID)
}

// activity counts the open sessions (each keeps the container from idling
// until it ends) and when the last one ended.
func (o *owners) activity() contract.Activity {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := contract.Activity{Last: o.lastEnded}
	if n := len(o.byID); n > 0 {
		a.Busy = map[string]int{o.busy: n}
	}
	return a
}
