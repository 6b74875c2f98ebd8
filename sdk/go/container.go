package deckhand

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

	"github.com/deckhand-dev/deckhand/sdk/go/api/files"
	"github.com/deckhand-dev/deckhand/sdk/go/api/process"
	"github.com/deckhand-dev/deckhand/sdk/go/api/terminal"
)

// Container is the client of one container's agent, through its gateway
// (<gateway URL>/_/<service>/...). The token (an agent token agt_... or an
// auth token) goes as Authorization: Bearer on every request. Safe for
// concurrent use.
type Container struct {
	base  string
	token string
	hc    *http.Client
}

// NewContainer builds a client of the agent gateway at gatewayURL (e.g.
// http://127.0.0.1:7700).
func NewContainer(gatewayURL string, o Options) (*Container, error) {
	u, err := url.Parse(strings.TrimSpace(gatewayURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("deckhand: gateway URL %q: must be http:// or https:// with a host", gatewayURL)
	}
	hc := o.HTTPClient
	if hc == nil {
		// No overall timeout: transfers and follows run as long as they
		// run; connecting and the answer's head are bounded.
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ResponseHeaderTimeout: 2 * time.Minute,
			MaxIdleConnsPerHost:   8,
		}}
	}
	return &Container{base: strings.TrimRight(u.String(), "/"), token: o.Token, hc: hc}, nil
}

// ServiceURL is the base URL of one service through the gateway.
func (c *Container) ServiceURL(service string) string { return c.base + "/_/" + service }

// Do sends req with the token set (an HttpRequestDoer for the generated
// clients).
func (c *Container) Do(req *http.Request) (*http.Response, error) {
	if c.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.hc.Do(req)
}

// Process is the process service's generated client.
func (c *Container) Process() *process.ClientWithResponses {
	cl, _ := process.NewClientWithResponses(c.ServiceURL("process"), process.WithHTTPClient(c))
	return cl
}

// Files is the files service's generated client.
func (c *Container) Files() *files.ClientWithResponses {
	cl, _ := files.NewClientWithResponses(c.ServiceURL("files"), files.WithHTTPClient(c))
	return cl
}

// Terminal is the terminal service's generated client.
func (c *Container) Terminal() *terminal.ClientWithResponses {
	cl, _ := terminal.NewClientWithResponses(c.ServiceURL("terminal"), terminal.WithHTTPClient(c))
	return cl
}

func (c *Container) request(ctx context.Context, method, service, path string, q url.Values, body io.Reader) (*http.Request, error) {
	u := c.ServiceURL(service) + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return http.NewRequestWithContext(ctx, method, u, body)
}

// Call sends a JSON request to service's path and decodes a 2xx answer
// into out (when not nil); any other status is an *Error with the
// service's code.
func (c *Container) Call(ctx context.Context, method, service, path string, q url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := c.request(ctx, method, service, path, q, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("deckhand: reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return errorOf(method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("deckhand: %s %s: unreadable answer: %w", method, path, err)
		}
	}
	return nil
}

// backoff is the wait before the n-th reconnect in a row (n from 1).
func backoff(n int) time.Duration {
	return min(time.Duration(n*n)*100*time.Millisecond, 5*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// MaxReconnects is how many dropped connections in a row, without
// progress between them, a stream or transfer survives.
const MaxReconnects = 8

func jsonUnmarshal(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("deckhand: unreadable answer: %w", err)
	}
	return nil
}

// Screenshot writes a PNG of the container's display to w (an *Error,
// status 503, when the container has no display).
func (c *Container) Screenshot(ctx context.Context, w io.Writer) (int64, error) {
	const path = "/api/v1/display/screenshots"
	req, err := c.request(ctx, http.MethodGet, "display", path, nil, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return 0, errorOf(http.MethodGet, path, resp.StatusCode, raw)
	}
	return io.Copy(w, resp.Body)
}
