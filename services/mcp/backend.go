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
	"time"

	"deckhand/platform/fault"
)

// backend calls an operation of the agent's other services that is no
// tool (a file's bytes, a stream, a process's output) on its loopback
// port, where the service's own server judges and limits it as any
// local caller's; a route tool runs in memory instead (routetools.go).
type backend struct {
	host    string
	base    int
	offsets map[string]int // contract.ServiceDeps.Offsets
	client  *http.Client
}

func newBackend(host string, base int, offsets map[string]int) *backend {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 64, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
		DisableCompression: true}
	return &backend{host: host, base: base, offsets: offsets, client: &http.Client{Transport: tr}}
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
	resp, err := b.client.Do(req)
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
