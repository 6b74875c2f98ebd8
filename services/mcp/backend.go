package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"deckhand/platform/fault"
)

// backend calls the agent's other services: in memory, through the
// service's own handler, when the agent runs it in this process
// (contract.ServiceDeps.InMemory), else on its loopback port.
type backend struct {
	host    string
	base    int
	offsets map[string]int // contract.ServiceDeps.Offsets
	client  *http.Client
	// inMemory is nil when this service runs as a child (--isolate).
	inMemory func(service string, rc *fasthttp.RequestCtx) bool
}

func newBackend(host string, base int, offsets map[string]int, inMemory func(string, *fasthttp.RequestCtx) bool) *backend {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 64, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
		DisableCompression: true}
	return &backend{host: host, base: base, offsets: offsets, client: &http.Client{Transport: tr}, inMemory: inMemory}
}

func (b *backend) close() { b.client.CloseIdleConnections() }

// url is the address of path on service, with query q.
func (b *backend) url(service, path string, q url.Values) string {
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(b.host, strconv.Itoa(b.base+b.offsets[service])), Path: path}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// call is one request to a service for a caller. body is JSON-encoded
// unless it is an io.Reader (sent as is) or nil.
type call struct {
	method, service, path string
	query                 url.Values
	body                  any
	header                http.Header
}

// do sends c for who and answers the response of a 2xx; anything else is
// the service's own container error (its code and message, as a direct
// caller would get them).
func (b *backend) do(ctx context.Context, who caller, c call) (*http.Response, error) {
	var rd io.Reader
	switch v := c.body.(type) {
	case nil:
	case io.Reader:
		rd = v
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, b.url(c.service, c.path, c.query), rd)
	if err != nil {
		return nil, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if _, raw := c.body.(io.Reader); c.body != nil && !raw {
		req.Header.Set("Content-Type", "application/json")
	}
	who.forward(req.Header)
	resp, err := b.memory(ctx, c.service, req)
	if resp == nil && err == nil {
		resp, err = b.client.Do(req)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &fault.Error{Code: fault.CodeUnavailable, Details: c.service,
			Message: "the " + c.service + " service did not answer (is it running on this agent?)"}
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotModified {
		defer resp.Body.Close()
		return nil, serviceError(c.service, resp)
	}
	return resp, nil
}

// memory runs req through the handler of c.service when this process
// serves it (backend.inMemory), as a request on its port: the same URL,
// Host and headers, so the service's request policy judges it as it
// judges one that arrived on its socket. Nil, nil when the service is not
// in this process, or req's body is not in memory or over the service's
// limit: the port takes it then.
func (b *backend) memory(ctx context.Context, service string, req *http.Request) (*http.Response, error) {
	if b.inMemory == nil {
		return nil, nil
	}
	var body []byte
	if req.Body != nil {
		// Only a body already in memory: http.NewRequest keeps its length.
		if req.GetBody == nil || req.ContentLength < 0 {
			return nil, nil
		}
		rd, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		if body, err = io.ReadAll(rd); err != nil {
			return nil, err
		}
	}
	rc := &fasthttp.RequestCtx{}
	r := &rc.Request
	r.Header.SetMethod(req.Method)
	r.SetRequestURI(req.URL.RequestURI())
	r.Header.SetHost(req.URL.Host)
	for k, vs := range req.Header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	if body != nil {
		r.SetBodyRaw(body)
		r.Header.SetContentLength(len(body))
	}
	if !b.inMemory(service, rc) {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		closeMemory(rc)
		return nil, err
	}
	resp := &http.Response{StatusCode: rc.Response.StatusCode(), Header: http.Header{}, Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1}
	for k, v := range rc.Response.Header.All() {
		resp.Header.Add(string(k), string(v))
	}
	if rc.Response.IsBodyStream() {
		// A streamed answer (a follow, SSE) is read as the service writes it.
		mb := &memoryBody{Reader: rc.Response.BodyStream(), rc: rc}
		// Cancelling the call ends the stream, as it closes a connection.
		mb.stop = context.AfterFunc(ctx, func() { mb.end() })
		resp.Body = mb
	} else {
		raw := bytes.Clone(rc.Response.Body())
		resp.ContentLength = int64(len(raw))
		closeMemory(rc)
		resp.Body = io.NopCloser(bytes.NewReader(raw))
	}
	resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	return resp, nil
}

// memoryBody is a streamed answer of a request made in memory; closing it
// ends the stream (the service's writer then fails, as on a closed
// connection) and releases the request.
type memoryBody struct {
	io.Reader
	rc   *fasthttp.RequestCtx
	stop func() bool
	once sync.Once
}

// end closes the stream, which unblocks a read waiting on it.
func (m *memoryBody) end() {
	m.once.Do(func() {
		if c, ok := m.Reader.(io.Closer); ok {
			_ = c.Close()
		}
	})
}

func (m *memoryBody) Close() error {
	m.stop()
	m.end()
	closeMemory(m.rc)
	return nil
}

// closeMemory ends a request made in memory as a server ends one: its
// body stream closed, its user values released.
func closeMemory(rc *fasthttp.RequestCtx) {
	_ = rc.Response.CloseBodyStream()
	rc.ResetUserValues()
}

// json sends c and decodes a JSON answer into out (nil: drop it).
func (b *backend) json(ctx context.Context, who caller, c call, out any) error {
	resp, err := b.do(ctx, who, c)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("the %s service's answer did not decode: %w", c.service, err)
	}
	// Read to the end, so the connection is reused: a new one costs the
	// service a look-up of its peer's owner (reqpolicy.LocalTrust).
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}

// bytes sends c and reads at most limit bytes of the answer.
func (b *backend) bytes(ctx context.Context, who caller, c call, limit int64) ([]byte, http.Header, error) {
	resp, err := b.do(ctx, who, c)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(raw)) > limit {
		return nil, nil, &fault.Error{Code: fault.CodePayloadTooLarge, Details: c.service,
			Message: fmt.Sprintf("the answer is over %d bytes", limit)}
	}
	return raw, resp.Header, nil
}

// serviceError is a service's refusal as the same typed error.
func serviceError(service string, resp *http.Response) error {
	var body struct {
		Code, Details, Message string
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(raw, &body) != nil || body.Code == "" {
		return &fault.Error{Code: fault.CodeBackend, Details: service,
			Message: fmt.Sprintf("the %s service answered %d", service, resp.StatusCode)}
	}
	return &fault.Error{Code: body.Code, Details: body.Details, Message: body.Message}
}

// errorText is what a tool answers for err: the code and the message,
// never a Go error's internals for an unknown error.
func errorText(err error) string {
	var pe *fault.Error
	if errors.As(err, &pe) {
		s := pe.Code + ": " + pe.Message
		if pe.Details != "" {
			s += " (" + pe.Details + ")"
		}
		return s
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "CANCELLED: the call was cancelled"
	}
	return "ERROR: " + err.Error()
}

func asPlatform(err error, target **fault.Error) bool { return errors.As(err, target) }
