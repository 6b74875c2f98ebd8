package deckhand

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/deckhand-dev/deckhand/sdk/go/api/files"
	"github.com/deckhand-dev/deckhand/sdk/go/api/process"
	"github.com/deckhand-dev/deckhand/sdk/go/api/terminal"
)

// Container is one container: its agent's services (Process, Files,
// Terminal, URL) and, for a handle from Client.Containers, its record and
// lifecycle. The agent is reached through the control plane's platform
// proxy (the per-service URLs of the record), at the agent address the
// record carries, or, for NewContainer, at a gateway URL. The token goes as
// Authorization: Bearer on every request to the agent. Safe for
// concurrent use.
type Container struct {
	tokenMu   sync.RWMutex
	token     string
	tokenExp  time.Time // of a minted access token
	explicit  bool      // token was given (not minted)
	hc        *http.Client
	proxyAddr string
	route     Route
	client    *Client
	cookie    string // Options.AgentTokenCookie

	mu   sync.RWMutex
	base string // the gateway (<base>/_/<service>), when reached at one address
	// own are services reached at their own address (NewService).
	own  map[string]string
	info ContainerInfo

	// Process runs commands; Files reads and writes files.
	Process Processes
	Files   Files
}

// NewContainer builds a client of the agent gateway at gatewayURL (e.g.
// http://127.0.0.1:7700).
func NewContainer(gatewayURL string, o Options) (*Container, error) {
	u, err := url.Parse(strings.TrimSpace(gatewayURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("deckhand: gateway URL %q: must be http:// or https:// with a host", gatewayURL)
	}
	c := &Container{base: strings.TrimRight(u.String(), "/"), token: cmp.Or(o.AgentToken, o.Token), explicit: true, hc: agentHTTP(o), cookie: o.AgentTokenCookie}
	c.Process, c.Files = Processes{c}, Files{c}
	return c, nil
}

// agentHTTP is the HTTP client of container traffic: no overall timeout
// (transfers and follows run as long as they run; connecting and the
// answer's head are bounded), every connection to ProxyAddr when set.
func agentHTTP(o Options) *http.Client {
	if o.HTTPClient != nil {
		return o.HTTPClient
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	dial := d.DialContext
	if o.ProxyAddr != "" {
		dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, o.ProxyAddr)
		}
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		ResponseHeaderTimeout: 2 * time.Minute,
		MaxIdleConnsPerHost:   8,
	}}
}

// container is the handle of a container whose record is info.
func (cl *Client) container(info ContainerInfo) *Container {
	cl.mu.Lock()
	if cl.agentHC == nil {
		cl.agentHC = agentHTTP(Options{HTTPClient: nil, ProxyAddr: cl.opt.ProxyAddr})
	}
	hc := cl.agentHC
	cl.mu.Unlock()
	c := &Container{token: cl.opt.AgentToken, explicit: cl.opt.AgentToken != "", hc: hc, proxyAddr: cl.opt.ProxyAddr,
		route: cmp.Or(cl.opt.AgentRoute, RouteProxy), client: cl, info: info, cookie: cl.opt.AgentTokenCookie}
	c.Process, c.Files = Processes{c}, Files{c}
	return c
}

// WithToken is a copy of the handle sending token to the agent instead.
func (c *Container) WithToken(token string) *Container {
	c.mu.RLock()
	n := &Container{token: token, explicit: true, hc: c.hc, proxyAddr: c.proxyAddr, route: c.route, client: c.client, base: c.base,
		info: c.info, cookie: c.cookie, own: c.own}
	c.mu.RUnlock()
	n.Process, n.Files = Processes{n}, Files{n}
	return n
}

// ID is the container's id ("" for a NewContainer handle).
func (c *Container) ID() string { return c.Info().ID }

// Info is the container's record as last fetched.
func (c *Container) Info() ContainerInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.info
}

func (c *Container) setInfo(i ContainerInfo) {
	c.mu.Lock()
	c.info = i
	c.mu.Unlock()
}

var errNoRecord = errors.New("deckhand: this handle was made from a gateway URL (NewContainer): it has no control-plane record; use Client.Containers")

// Refresh fetches the container's record again.
func (c *Container) Refresh(ctx context.Context) (ContainerInfo, error) {
	if c.client == nil {
		return ContainerInfo{}, errNoRecord
	}
	w, err := c.client.Containers.get(ctx, c.ID())
	if err != nil {
		return ContainerInfo{}, err
	}
	c.setInfo(w.info())
	return w.info(), nil
}

// WaitRunning waits until the container runs (Containers.WaitRunning) and
// keeps its record, whose agent address and URLs the services then use.
func (c *Container) WaitRunning(ctx context.Context) (ContainerInfo, error) {
	if c.client == nil {
		return ContainerInfo{}, errNoRecord
	}
	i, err := c.client.Containers.WaitRunning(ctx, c.ID())
	if i.ID != "" {
		c.setInfo(i)
	}
	return i, err
}

// Delete removes the container (Containers.Delete).
func (c *Container) Delete(ctx context.Context) error {
	if c.client == nil {
		return errNoRecord
	}
	return c.client.Containers.Delete(ctx, c.ID())
}

// URL is the URL of one of the container's services (process, files,
// terminal ...), or of a port preview as "p<port>" (p8080), through the
// platform proxy; for a NewContainer handle, through its gateway.
func (c *Container) URL(service string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.base != "" {
		return c.base + "/_/" + service
	}
	if u, ok := c.info.URLs[service]; ok {
		return u
	}
	// Every service's host differs from another's in the service name only.
	for svc, u := range c.info.URLs {
		marker := "-" + svc + "-1."
		if i := strings.Index(u, marker); i >= 0 {
			return u[:i] + "-" + service + "-1." + u[i+len(marker):]
		}
	}
	return ""
}

// ServiceURL is where the SDK sends a service's requests: URL, or the
// agent's gateway at the record's agent address with RouteAgentAddr.
func (c *Container) ServiceURL(service string) string {
	c.mu.RLock()
	route, addr, base, own := c.route, c.info.AgentAddr, c.base, c.own[service]
	c.mu.RUnlock()
	if own != "" {
		return own
	}
	if base == "" && route == RouteAgentAddr && addr != "" {
		return "http://" + addr + "/_/" + service
	}
	return c.URL(service)
}

// Do sends req with the token set (an HttpRequestDoer for the generated
// clients).
func (c *Container) Do(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") == "" {
		tok, err := c.agentToken(req.Context())
		if err != nil {
			return nil, err
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
			if c.cookie != "" {
				req.AddCookie(&http.Cookie{Name: c.cookie, Value: tok})
			}
		}
	}
	return c.hc.Do(req)
}

// AccessTokenTTL is how long the access tokens a handle mints last; a
// handle mints a new one when less than AccessTokenRenew is left.
const (
	AccessTokenTTL   = time.Hour
	AccessTokenRenew = 5 * time.Minute
)

// agentToken is the bearer for the agent: the handle's explicit token, or
// (a handle from Client.Containers without one) an access token minted
// from the control plane and renewed before it expires.
func (c *Container) agentToken(ctx context.Context) (string, error) {
	c.tokenMu.RLock()
	tok, exp, explicit := c.token, c.tokenExp, c.explicit
	c.tokenMu.RUnlock()
	if explicit || c.client == nil || (tok != "" && time.Until(exp) > AccessTokenRenew) {
		return tok, nil
	}
	if err := c.Grant(ctx); err != nil {
		return "", err
	}
	c.tokenMu.RLock()
	defer c.tokenMu.RUnlock()
	return c.token, nil
}

// Grant mints an access token for the container's agent
// (POST /api/v1/containers/{id}/access-tokens: signed by the control
// plane, good for every service for AccessTokenTTL) and uses it from now
// on. A handle from Client.Containers without an explicit token does this
// by itself on its first call to the agent, and again before the token
// expires; Grant makes it happen now, so a refusal surfaces here.
func (c *Container) Grant(ctx context.Context) error {
	if c.client == nil {
		return errNoRecord
	}
	var at struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	path := "/api/v1/containers/" + url.PathEscape(c.ID()) + "/access-tokens"
	if err := c.client.Call(ctx, http.MethodPost, path, nil, map[string]any{"ttl_seconds": int(AccessTokenTTL.Seconds())}, &at); err != nil {
		return err
	}
	if at.Token == "" {
		return fmt.Errorf("deckhand: %s answered no token", path)
	}
	c.tokenMu.Lock()
	c.token, c.tokenExp, c.explicit = at.Token, at.ExpiresAt, false
	c.tokenMu.Unlock()
	return nil
}

// ProcessAPI is the process service's generated client.
func (c *Container) ProcessAPI() *process.ClientWithResponses {
	cl, _ := process.NewClientWithResponses(c.ServiceURL("process"), process.WithHTTPClient(c))
	return cl
}

// FilesAPI is the files service's generated client.
func (c *Container) FilesAPI() *files.ClientWithResponses {
	cl, _ := files.NewClientWithResponses(c.ServiceURL("files"), files.WithHTTPClient(c))
	return cl
}

// TerminalAPI is the terminal service's generated client.
func (c *Container) TerminalAPI() *terminal.ClientWithResponses {
	cl, _ := terminal.NewClientWithResponses(c.ServiceURL("terminal"), terminal.WithHTTPClient(c))
	return cl
}

func (c *Container) request(ctx context.Context, method, service, path string, q url.Values, body io.Reader) (*http.Request, error) {
	base := c.ServiceURL(service)
	if base == "" {
		return nil, fmt.Errorf("deckhand: container %s: no address for its %s service yet (WaitRunning first)", c.ID(), service)
	}
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return http.NewRequestWithContext(ctx, method, u, body)
}

// get sends a GET of service's path with h's headers and answers the
// response when it is 200 OK; any other status is an *Error.
func (c *Container) get(ctx context.Context, service, path string, q url.Values, h http.Header) (*http.Response, error) {
	req, err := c.request(ctx, http.MethodGet, service, path, q, nil)
	if err != nil {
		return nil, err
	}
	maps.Copy(req.Header, h)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, errorOf(http.MethodGet, path, resp.StatusCode, raw)
	}
	return resp, nil
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

// Screenshot writes a PNG of the container's display to w (an *Error,
// status 503, when the container has no display).
func (c *Container) Screenshot(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.get(ctx, "display", "/api/v1/display/screenshots", nil, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(w, resp.Body)
}
