package reqpolicy

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// FrameAncestorsNone is the Content-Security-Policy that keeps every other
// page from framing an answer.
const FrameAncestorsNone = "frame-ancestors 'none'"

// NoFraming marks an answer as one no page may frame (a live shell or
// desktop under another site's clicks): X-Frame-Options DENY for browsers
// without CSP, and FrameAncestorsNone as a Content-Security-Policy of its
// own beside any the handler set (a browser enforces every policy header,
// so the handler's stays whole).
func NoFraming(h *fasthttp.ResponseHeader) {
	h.Set("X-Frame-Options", "DENY")
	for _, v := range h.PeekAll("Content-Security-Policy") {
		if bytes.Equal(v, []byte(FrameAncestorsNone)) {
			return
		}
	}
	h.Add("Content-Security-Policy", FrameAncestorsNone)
}
