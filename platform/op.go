package platform

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"

	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"

	"github.com/gofiber/fiber/v3"
)

// Op is the Operation of fn, a domain method taking a typed input and
// answering a typed output.
func Op[In, Out any](fn func(context.Context, In) (Out, error)) Operation {
	o := &operation{in: planInput(reflect.TypeFor[In]()), out: planOutput(reflect.TypeFor[Out]())}
	o.serve = func(h *Host, r Route) fiber.Handler {
		write, wild := o.out.writer(h, r), wildcard(r.Path)
		return o.abandoning(func(c fiber.Ctx) error {
			var in In
			if err := o.in.bind(c, &in, wild); err != nil {
				return err
			}
			out, err := fn(c.Context(), in)
			if err != nil {
				return err
			}
			return write(c, out)
		})
	}
	o.call = func(ctx context.Context, r Route, args map[string]json.RawMessage) (any, error) {
		var in In
		if err := o.in.bindArgs(r, args, &in); err != nil {
			return nil, err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return o.out.toolAnswer(out), nil
	}
	return o
}

// abandoning closes the connection after a failed answer when the method
// reads the body itself (an io.Reader Body) and left some of it unread.
func (o *operation) abandoning(h fiber.Handler) fiber.Handler {
	if !o.in.streams() {
		return h
	}
	return func(c fiber.Ctx) error {
		err := h(c)
		if err != nil && bodyLeft(c) {
			AbandonBody(c)
		}
		return err
	}
}

// ReadOp is Op for a method without input.
func ReadOp[Out any](fn func(context.Context) (Out, error)) Operation {
	o := &operation{out: planOutput(reflect.TypeFor[Out]())}
	o.serve = func(h *Host, r Route) fiber.Handler {
		write := o.out.writer(h, r)
		return func(c fiber.Ctx) error {
			out, err := fn(c.Context())
			if err != nil {
				return err
			}
			return write(c, out)
		}
	}
	o.call = func(ctx context.Context, _ Route, args map[string]json.RawMessage) (any, error) {
		for name := range args {
			return nil, fault.Invalid(name, "is not an argument of this tool")
		}
		out, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return o.out.toolAnswer(out), nil
	}
	return o
}

// CommandOp is Op for a method that answers nothing but success: the
// route's Status (204 No Content on a container service; the envelope
// with the route's Message on the control plane).
func CommandOp[In any](fn func(context.Context, In) error) Operation {
	o := &operation{in: planInput(reflect.TypeFor[In]())}
	o.serve = func(h *Host, r Route) fiber.Handler {
		write, wild := (*outputPlan)(nil).writer(h, r), wildcard(r.Path)
		return o.abandoning(func(c fiber.Ctx) error {
			var in In
			if err := o.in.bind(c, &in, wild); err != nil {
				return err
			}
			if err := fn(c.Context(), in); err != nil {
				return err
			}
			return write(c, nil)
		})
	}
	o.call = func(ctx context.Context, r Route, args map[string]json.RawMessage) (any, error) {
		var in In
		if err := o.in.bindArgs(r, args, &in); err != nil {
			return nil, err
		}
		return nil, fn(ctx, in)
	}
	return o
}

// StreamOp is the Operation of a net/http handler that writes its own
// answer (a stream of events, a WebSocket, a file): its input is bound and
// checked first, the same way, and a broken rule answers the usual error
// before fn runs. Document the answer with Route.ContentType (and
// Route.Response for the shape of what is streamed) or Route.WebSocket.
func StreamOp[In any](fn func(w http.ResponseWriter, r *http.Request, in In)) Operation {
	o := &operation{in: planInput(reflect.TypeFor[In]()), stream: true}
	o.serve = func(h *Host, r Route) fiber.Handler {
		serve := h.httpHandler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			in, _ := req.Context().Value(boundKey{}).(*In)
			if in == nil {
				reqpolicy.WriteHTTPError(w, fault.Internal("bind the request", nil))
				return
			}
			fn(w, req, *in)
		}))
		wild := wildcard(r.Path)
		return func(c fiber.Ctx) error {
			in := new(In)
			if err := o.in.bind(c, in, wild); err != nil {
				return err
			}
			c.RequestCtx().SetUserValue(boundKey{}, in)
			return serve(c)
		}
	}
	return o
}

// ConnOp is StreamOp for a handler that answers on the fasthttp
// connection itself (a WebSocket upgraded without net/http, a stream
// written with fasthttp's body writer), where the net/http adaptor's copies
// would cost throughput. Its input is bound and checked first, the same
// way, and documented from its type; document the answer as for StreamOp.
func ConnOp[In any](fn func(c fiber.Ctx, in In) error) Operation {
	o := &operation{in: planInput(reflect.TypeFor[In]()), stream: true}
	o.serve = func(h *Host, r Route) fiber.Handler {
		wild := wildcard(r.Path)
		return func(c fiber.Ctx) error {
			var in In
			if err := o.in.bind(c, &in, wild); err != nil {
				return err
			}
			return fn(c, in)
		}
	}
	return o
}

// boundKey carries a StreamOp's bound input to its net/http handler.
type boundKey struct{}

// noBody: an answer with this status carries no body (HTTP forbids one
// on 204 and 304; a redirect's is never read).
func noBody(status int) bool {
	return status == http.StatusNoContent || (status >= 300 && status < 400)
}

// writer builds the function that answers out (an Out value) for route r
// on host h. A nil plan answers no body.
func (p *outputPlan) writer(h *Host, r Route) func(c fiber.Ctx, out any) error {
	write := p.bodyWriter(h, r)
	if p == nil || !p.bodyHeaders {
		return write
	}
	return func(c fiber.Ctx, out any) error {
		if err := write(c, out); err != nil {
			return err
		}
		bh, ok := out.(BodyHeaders)
		if !ok || (reflect.ValueOf(out).Kind() == reflect.Pointer && reflect.ValueOf(out).IsNil()) {
			return nil
		}
		for name, vals := range bh.BodyHeaders(c.Response().Body()) {
			for _, v := range vals {
				c.Response().Header.Add(name, v)
			}
		}
		return nil
	}
}

func (p *outputPlan) bodyWriter(h *Host, r Route) func(c fiber.Ctx, out any) error {
	status := cmp.Or(r.Status, http.StatusOK)
	envelope := h.cfg.Style == EnvelopeErrors
	message := r.Message
	if p == nil || (p.wrapper && p.bodyTyp == nil) {
		return func(c fiber.Ctx, out any) error {
			st := status
			if p != nil {
				st = p.setHeaders(c, out, st)
			}
			if noBody(st) {
				c.Status(st)
				return nil
			}
			if envelope {
				return Respond(c, st, message, nil)
			}
			return c.SendStatus(st)
		}
	}
	contentType := r.ContentType
	if !p.wrapper {
		if p.raw {
			return func(c fiber.Ctx, out any) error {
				c.Set(fiber.HeaderContentType, contentType)
				return c.Status(status).Send(out.([]byte))
			}
		}
		if envelope {
			return func(c fiber.Ctx, out any) error { return Respond(c, status, message, out) }
		}
		return func(c fiber.Ctx, out any) error { return c.Status(status).JSON(out) }
	}
	if contentType == "" && p.binary() {
		contentType = "application/octet-stream"
	}
	return func(c fiber.Ctx, out any) error {
		if p.binary() {
			c.Set(fiber.HeaderContentType, contentType) // a Content-Type header field overrides it
		}
		st := p.setHeaders(c, out, status)
		v := reflect.ValueOf(out)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return c.SendStatus(st)
			}
			v = v.Elem()
		}
		if noBody(st) {
			c.Status(st)
			return nil
		}
		body := v.FieldByIndex(p.body).Interface()
		switch {
		case p.stream:
			c.Status(st)
			rd, _ := body.(io.Reader)
			if rd == nil {
				return nil
			}
			size := -1
			if p.length != nil {
				size = int(v.FieldByIndex(p.length).Int())
			}
			return c.SendStream(rd, size)
		case p.writes:
			c.Status(st)
			fn, _ := body.(BodyWriter)
			if fn == nil {
				return nil
			}
			return c.SendStreamWriter(func(w *bufio.Writer) { fn(w) })
		case p.raw:
			return c.Status(st).Send(body.([]byte))
		case envelope:
			msg := message
			if p.message != nil {
				if m := v.FieldByIndex(p.message).String(); m != "" {
					msg = m
				}
			}
			return Respond(c, st, msg, body)
		}
		return c.Status(st).JSON(body)
	}
}

// setHeaders sends a wrapper's header fields and answers its status
// (status when it sets none).
func (p *outputPlan) setHeaders(c fiber.Ctx, out any, status int) int {
	v := reflect.ValueOf(out)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return status
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return status
	}
	for _, hd := range p.headers {
		f := v.FieldByIndex(hd.index)
		var s string
		switch k := f.Kind(); {
		case k == reflect.Slice:
			for _, line := range f.Interface().([]string) {
				if line != "" {
					c.Response().Header.Add(hd.name, line)
				}
			}
			continue
		case k == reflect.String:
			s = f.String()
		case k >= reflect.Int && k <= reflect.Int64:
			s = strconv.FormatInt(f.Int(), 10)
		case k >= reflect.Uint && k <= reflect.Uint64:
			s = strconv.FormatUint(f.Uint(), 10)
		default:
			s = strconv.FormatFloat(f.Float(), 'f', -1, 64)
		}
		if s != "" {
			c.Set(hd.name, s)
		}
	}
	if p.status != nil {
		if st := int(v.FieldByIndex(p.status).Int()); st != 0 {
			return st
		}
	}
	return status
}

// Envelope is the control plane's success body.
type Envelope struct {
	StatusCode int    `json:"statusCode"`
	Message    string `json:"message"`
	Data       any    `json:"data,omitempty"`
}

// Respond writes a control-plane success envelope.
func Respond(c fiber.Ctx, status int, message string, data any) error {
	return c.Status(status).JSON(Envelope{StatusCode: status, Message: message, Data: data})
}

// JSON writes a plain JSON resource (container services).
func JSON(c fiber.Ctx, status int, v any) error {
	return c.Status(status).JSON(v)
}
