package platform

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"

	"github.com/gofiber/fiber/v3"
)

// Operation is a route's typed handler: a domain method the host calls
// with its bound input (bind.go) and whose answer it writes. Build one
// with Op, ReadOp, CommandOp or StreamOp and put it in Route.Op; the route
// entry keeps what is HTTP about it (method, path, success Status, the
// control plane's Message, policy, documentation):
//
//	{Method: http.MethodPost, Path: "/api/v1/wallet/transfer-to-ai", Policy: platform.SignedIn,
//		Summary: "Move money to AI credit", Message: "Transfer completed", Op: platform.Op(s.Transfer)}
//
//	func (s *Service) Transfer(ctx context.Context, in TransferInput) (*Receipt, error)
//
// The answer goes out as JSON: the value itself on a container service,
// inside {statusCode, message, data} on the control plane. An output with
// a field named Body (without a json tag) is a wrapper: Body is the
// answer, fields tagged header:"Name" are response headers (empty ones are
// not sent), an int field named Status, when not 0, replaces the route's
// Status (201 for a created resource, 200 for a replaced one: list the
// others in Route.Statuses), and on the control plane a string field named
// Message, when not empty, replaces the route's Message. A []byte answer
// (or Body) is sent as it is, with the route's ContentType. A Body of type
// io.Reader is streamed (a file, zero-copy with sendfile(2) when it is an
// *os.File on a TCP connection) and closed when it is an io.Closer; the
// wrapper's int64 header:"Content-Length" field, when it has one, is its
// size (-1: unknown). A body of unknown size goes out chunked, one chunk
// per Read, each flushed to the client: gather small writes (a bufio.Writer
// before a pipe) rather than hand over a reader that returns a few bytes
// at a time. A Body of type BodyWriter is called to
// write the answer as it is made (an archive of a walk, Server-Sent
// Events). A Content-Type header field overrides the route's ContentType.
// The document and the handler come from the same types, so they cannot
// disagree.
//
// A header field may be a []string: each value is its own header line
// (Set-Cookie, one cookie a line). A redirect is a wrapper with a
// Location header field and a Status of 302 or 303. An answer whose
// status is 204, 304 or a redirect (3xx) sends no body, whatever Body
// holds. An output that implements BodyHeaders adds headers computed from
// the bytes written (a signature over the body).
type Operation interface {
	operation() *operation
}

type operation struct {
	in     *inputPlan  // nil: no input
	out    *outputPlan // nil: no answer beyond the status (and message)
	stream bool        // a net/http handler writes the answer
	serve  func(h *Host, r Route) fiber.Handler
	// call runs the method with a tool's arguments (tool.go); nil for an
	// operation that writes its own answer.
	call func(ctx context.Context, r Route, args map[string]json.RawMessage) (any, error)
}

func (o *operation) operation() *operation { return o }

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

// wildcard is the name of path's trailing {name...} parameter ("" when it
// has none).
func wildcard(path string) string {
	i := strings.LastIndexByte(path, '{')
	if i < 0 || !strings.HasSuffix(path, "...}") {
		return ""
	}
	return path[i+1 : len(path)-4]
}

// boundKey carries a StreamOp's bound input to its net/http handler.
type boundKey struct{}

// BodyWriter writes a streamed answer as it is made, after the status and
// headers went out. It runs after the method returned (so it must not use
// the method's context) and stops when a write or Flush fails: the client
// is gone.
type BodyWriter func(w StreamWriter)

// StreamWriter is where a BodyWriter writes; Flush sends what is buffered
// to the client now (each Server-Sent Event, say).
type StreamWriter interface {
	io.Writer
	io.StringWriter
	Flush() error
}

var bodyWriterType = reflect.TypeFor[BodyWriter]()

// outputPlan is how one output type is written.
type outputPlan struct {
	typ     reflect.Type
	wrapper bool
	body    []int        // the wrapper's Body field
	bodyTyp reflect.Type // what goes out (typ when not a wrapper)
	raw     bool         // []byte: sent as it is
	stream  bool         // io.Reader: streamed
	writes  bool         // BodyWriter: written as it is made
	length  []int        // the Content-Length field of a streamed Body
	headers []outHeader
	status  []int // the wrapper's Status field
	message []int // the wrapper's Message field (the envelope's message)
	// bodyHeaders: the output implements BodyHeaders.
	bodyHeaders bool
}

type outHeader struct {
	index []int
	name  string
	doc   string
	num   bool
}

// binary reports whether the answer is bytes, not JSON.
func (p *outputPlan) binary() bool { return p.raw || p.stream || p.writes }

func planOutput(t reflect.Type) *outputPlan {
	p := &outputPlan{typ: t, bodyTyp: t}
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() == reflect.Struct {
		for i := 0; i < st.NumField(); i++ {
			f := st.Field(i)
			if h := f.Tag.Get("header"); h != "" {
				if f.Type.Kind() != reflect.String && !isNumber(f.Type.Kind()) && f.Type != stringsType {
					panic("platform: output header " + st.String() + "." + f.Name + " must be a string, a []string or a number")
				}
				p.headers = append(p.headers, outHeader{index: f.Index, name: h, doc: f.Tag.Get("doc"), num: f.Type.Kind() != reflect.String})
				p.wrapper = true
			}
			switch {
			case isBodyField(f):
				p.body, p.bodyTyp, p.wrapper = f.Index, f.Type, true
			case f.Name == "Status" && f.Type.Kind() == reflect.Int:
				p.status = f.Index
			case f.Name == "Message" && f.Type.Kind() == reflect.String && f.Tag.Get("json") == "":
				p.message = f.Index
			}
		}
		if p.wrapper && p.body == nil {
			p.bodyTyp = nil // headers only
		}
		if !p.wrapper {
			p.status, p.message = nil, nil // a resource's own Status or Message field is data
		}
	}
	p.raw = p.bodyTyp == bytesType
	if (p.bodyTyp == readerType || p.bodyTyp == bodyWriterType) && !p.wrapper {
		panic("platform: output " + t.String() + " must be a wrapper struct with the stream as its Body")
	}
	p.stream = p.bodyTyp == readerType
	p.writes = p.bodyTyp == bodyWriterType
	if p.stream {
		for i, hd := range p.headers {
			if strings.EqualFold(hd.name, "Content-Length") {
				if f := st.FieldByIndex(hd.index); f.Type.Kind() != reflect.Int64 {
					panic("platform: output " + st.String() + "." + f.Name + " (Content-Length) must be an int64")
				}
				p.length = hd.index
				p.headers = append(p.headers[:i:i], p.headers[i+1:]...)
				break
			}
		}
	}
	p.bodyHeaders = t.Implements(bodyHeadersType)
	return p
}

var (
	stringsType     = reflect.TypeFor[[]string]()
	bodyHeadersType = reflect.TypeFor[BodyHeaders]()
)

// BodyHeaders is implemented by an output whose headers are computed from
// the bytes the host writes (a signature over the very body sent, which
// only exists once the answer is encoded): the host calls BodyHeaders with
// those bytes after writing them, and adds each value it answers as a
// header line. Headers it adds are not in the OpenAPI document: the
// route's Description names them.
type BodyHeaders interface {
	BodyHeaders(body []byte) http.Header
}

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
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
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
