package deckhand

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Request is one control-plane call for Client.Send: what Call takes and
// the headers it does not (a two-factor code, another bearer).
type Request struct {
	Method string
	Path   string // /api/v1/...
	Query  url.Values
	Body   any // marshalled to JSON; nil sends none
	// Header is added to the request; an Authorization header here wins
	// over the client's token.
	Header http.Header
}

// Answer is a verified control-plane answer: its exact body and, for the
// JSON envelope, its message and data as sent.
type Answer struct {
	Status  int
	Header  http.Header
	Body    []byte
	Message string
	Data    json.RawMessage
}

// Send sends r and answers the verified answer (Do's checks). A status of
// 400 or more is an *Error with the server's code and message, returned
// with the answer.
func (c *Client) Send(ctx context.Context, r Request) (*Answer, error) {
	return c.send(ctx, r, nil)
}

// send is Send decoding a 2xx envelope's data into out as well (when not
// nil), in the one pass that reads the envelope; the Answer's Data is then
// left empty.
func (c *Client) send(ctx context.Context, r Request, out any) (*Answer, error) {
	var rd io.Reader
	if r.Body != nil {
		raw, err := json.Marshal(r.Body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	u := c.base + r.Path
	if len(r.Query) > 0 {
		u += "?" + r.Query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, raw, err := c.exchange(req)
	if err != nil {
		return nil, err
	}
	a := &Answer{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	path := req.URL.Path
	// One pass reads the envelope: its statusCode (which must be the
	// status the answer came with, as Do checks), message and data.
	var env struct {
		StatusCode *int   `json:"statusCode"`
		Message    string `json:"message"`
		Data       any    `json:"data"` // a pointer: decoded into
	}
	var data json.RawMessage
	env.Data = &data
	if out != nil && resp.StatusCode < 300 {
		env.Data = out
	}
	var envErr error
	if len(raw) > 0 && raw[0] == '{' {
		envErr = json.Unmarshal(raw, &env)
		// A data that does not fit out still leaves statusCode read.
		var typeErr *json.UnmarshalTypeError
		if envErr == nil || errors.As(envErr, &typeErr) {
			if err := envelopeStatus(resp.StatusCode, env.StatusCode); err != nil {
				return nil, &SignatureError{Method: r.Method, Path: req.URL.EscapedPath(), Err: err}
			}
		}
	}
	if resp.StatusCode >= 400 {
		return a, errorOf(r.Method, path, resp.StatusCode, raw)
	}
	ct := resp.Header.Get("Content-Type")
	if len(raw) > 0 && (strings.HasPrefix(ct, "application/json") || strings.Contains(ct, "+json") || (ct == "" && raw[0] == '{')) {
		if raw[0] != '{' {
			envErr = json.Unmarshal(raw, &env)
		}
		if envErr != nil {
			if out != nil {
				return a, fmt.Errorf("deckhand: %s %s: the answer is not the JSON envelope with the data expected: %w", r.Method, path, envErr)
			}
			return a, fmt.Errorf("deckhand: %s %s: the answer is not the JSON envelope: %w", r.Method, path, envErr)
		}
		a.Message, a.Data = env.Message, data
	}
	return a, nil
}

// FetchKeys makes sure the control plane's key set is held (fetched, or
// from Options.KeyCache), so a program can fail early against a server
// that does not sign or whose key set was altered on the way.
func (c *Client) FetchKeys(ctx context.Context) error {
	_, err := c.Send(ctx, Request{Method: http.MethodGet, Path: PublicKeyPath})
	return err
}
