// Package agentapi is the deckhand CLI's client of one container's agent,
// through its gateway (`<agent URL>/_/<service>/...`): JSON calls with the
// container services' error body turned into an *Error, resumable and
// checksummed file transfers (transfer.go), and the journal's follow
// stream (sse.go).
package agentapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"deckhand/platform/localtcp"
)

// DefaultURL is the agent a client command talks to without --agent.
const DefaultURL = "http://127.0.0.1:7700"

// TokenCookie is the cookie the token also goes in, as the tunnel client
// sends it, for proxy-permission groups that read a cookie.
const TokenCookie = "deckhand_token"

// Error is a container service's error body.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Details string `json:"details"`
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return fmt.Sprintf("%s (%s)", e.Message, e.Code)
}

// Client talks to one agent.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New checks the agent URL. token (an agent or auth token), when set, goes
// as Authorization: Bearer and as the deckhand_token cookie on every
// request, for the gateway's proxy permissions.
func New(agentURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(agentURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("agent URL %q: must be http:// or https:// with a host, e.g. %s", agentURL, DefaultURL)
	}
	if hc == nil {
		// No overall timeout: transfers and follows run as long as they
		// run; connecting and waiting for an answer's head are bounded.
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           localtcp.DialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}),
			TLSHandshakeTimeout:   15 * time.Second,
			ResponseHeaderTimeout: 2 * time.Minute,
			MaxIdleConnsPerHost:   4,
		}}
	}
	return &Client{base: strings.TrimRight(u.String(), "/"), token: token, http: hc}, nil
}

// BaseURL is the agent's URL.
func (c *Client) BaseURL() string { return c.base }

// URL is the address of path on service through the gateway; service
// "" is the agent's own route (path as it is, e.g. /api/v1/agent/leases).
func (c *Client) URL(service, path string, q url.Values) string {
	u := c.base + path
	if service != "" {
		u = c.base + "/_/" + service + path
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// NewRequest builds a request to service with the token set.
func (c *Client) NewRequest(ctx context.Context, method, service, path string, q url.Values, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.URL(service, path, q), body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.AddCookie(&http.Cookie{Name: TokenCookie, Value: c.token})
	}
	return req, nil
}

// Send runs req; a network failure names the agent.
func (c *Client) Send(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, req.Context().Err()
		}
		return nil, fmt.Errorf("cannot reach the agent at %s: %w", c.base, err)
	}
	return resp, nil
}

// JSON sends body (marshalled when not nil) and decodes a 2xx answer into
// out (when not nil). Any other status is an *Error.
func (c *Client) JSON(ctx context.Context, method, service, path string, q url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := c.NewRequest(ctx, method, service, path, q, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return ErrorOf(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("agent %s: reading the answer: %w", c.base, err)
	}
	if m, ok := out.(*json.RawMessage); ok {
		*m = raw
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("agent %s: unreadable answer to %s %s: %w", c.base, method, path, err)
	}
	return nil
}

// ErrorOf reads a non-2xx answer into an *Error (its body, when it is a
// service error body, else the status and the start of the body).
func ErrorOf(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Status: resp.StatusCode}
	if json.Unmarshal(raw, e) != nil || e.Message == "" {
		e.Code = ""
		e.Message = strings.TrimSpace(string(raw))
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	return e
}

func decodeJSON(r io.Reader, v any) error {
	return json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(v)
}
