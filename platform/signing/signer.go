package signing

import (
	"crypto/ed25519"
	"sync"

	clockpkg "deckhand/platform/clock"

	"github.com/gofiber/fiber/v3"
)

// Signer signs control-plane responses with the key set's active key.
type Signer struct {
	keys  *KeySet
	clock clockpkg.Clock
	memo  *memo
}

// NewSigner signs with keys, reading time from clock (nil: system clock).
func NewSigner(keys *KeySet, clock clockpkg.Clock) *Signer {
	if clock == nil {
		clock = clockpkg.SystemClock{}
	}
	return &Signer{keys: keys, clock: clock, memo: newMemo()}
}

// bufPool holds the "<t>.<body>" buffers so signing a response allocates
// nothing proportional to the body.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Sign returns the header value for a response to path with body.
func (s *Signer) Sign(path string, body []byte) string {
	t := s.clock.Now().Unix()
	k := s.keys.Active()
	sig, h, ok := s.memo.get(t, k.ID, body)
	if !ok {
		bp := bufPool.Get().(*[]byte)
		msg := appendSignedData((*bp)[:0], t, body)
		sig = ed25519.Sign(k.private, msg)
		if cap(msg) <= 1<<20 { // don't pin huge buffers in the pool
			*bp = msg[:0]
			bufPool.Put(bp)
		}
		s.memo.put(t, k.ID, h, body, sig)
	}
	return FormatHeader(t, k.ID, path, sig)
}

// Finalize is the platform.HostConfig.Finalize hook: it signs the complete
// response, whatever produced it (handler, error renderer, 404, 413).
//
// A streamed body (SSE, long downloads) is left unsigned: its bytes are not
// known when the headers go out, and reading them here would buffer the
// whole stream. A HEAD answer carries the signature of the body GET would
// send, as its other headers describe that body too.
func (s *Signer) Finalize(c fiber.Ctx) {
	if c.Response().IsBodyStream() {
		return
	}
	body := c.Response().Body()
	c.Set(Header, s.Sign(c.Path(), body))
	// A client that sent a nonce gets the answer bound to its request
	// (binding.go); one whose nonce is malformed gets no binding, which
	// its own check then refuses.
	if n := c.Get(NonceHeader); n != "" && ValidNonce(n) {
		c.Set(BindingHeader, s.SignBinding(Binding{Status: c.Response().StatusCode(), Method: c.Method(), Path: c.Path(),
			ETag: string(c.Response().Header.Peek("ETag")), Nonce: n, Body: body}))
	}
}

// SignBinding returns the X-Service-Binding value for b, signed now with
// the active key. Nothing is memoized: the nonce makes every one unique.
func (s *Signer) SignBinding(b Binding) string {
	t := s.clock.Now().Unix()
	k := s.keys.Active()
	return FormatBinding(t, k.ID, b.Status, ed25519.Sign(k.private, BindingData(t, b)))
}
