package reqpolicy

import (
	"net"

	"github.com/valyala/fasthttp"
)

// CloseIfNothingRead handles fasthttp's error for a connection that sent
// not one byte of a request before its read deadline: it closes the
// connection and reports true, so no answer is written. Browsers open
// connections ahead of need and may send the first request on one long
// after it was opened; an unsolicited timeout answer queued on it would be
// read as the answer to that request. fasthttp passes exactly this case as
// the bare network error; a request cut short part-way arrives wrapped and
// is still answered.
func CloseIfNothingRead(ctx *fasthttp.RequestCtx, err error) bool {
	ne, bare := err.(net.Error)
	if !bare || !ne.Timeout() {
		return false
	}
	_ = ctx.Conn().Close()
	return true
}
