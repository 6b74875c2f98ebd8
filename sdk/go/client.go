package deckhand

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deckhand-dev/deckhand/sdk/go/api/control"
)

// MaxAnswer bounds a control-plane answer the client reads (an invoice
// PDF is the largest): the whole body must be read to check its signature.
const MaxAnswer = 64 << 20

// Options configure a Client or a Container.
type Options struct {
	// Token is the bearer credential: a session token (Login sets it), an
	// auth token (svc_...) or, for a Container, an agent token (agt_...).
	Token string
	// HTTPClient sends the requests (nil: one with a 60 s timeout for the
	// control plane, none for a container's long transfers).
	HTTPClient *http.Client
	// Now is the clock the replay window is judged by (nil: time.Now).
	Now func() time.Time
	// KeyCache, when set, keeps the control plane's key set between
	// processes.
	KeyCache KeyCache

	// AgentToken is the credential a Client's container handles send to
	// their agents (empty: Token).
	AgentToken string
	// AgentTokenCookie, when set, names a cookie the agent's credential
	// also goes in, for proxy-permission groups that read a cookie.
	AgentTokenCookie string
	// AgentRoute is how a Client's container handles reach their agents:
	// RouteProxy (the default) through the platform proxy's per-service
	// URLs, RouteAgentAddr straight to the agent address the container's
	// record carries (reachable where the control plane runs).
	AgentRoute Route
	// ProxyAddr (host:port), when set, is where every per-service URL is
	// connected to, for a platform proxy whose names DNS does not resolve
	// (*.localhost on a development machine).
	ProxyAddr string
}

// Route is how container handles reach their agents.
type Route string

// The routes to a container's agent.
const (
	RouteProxy     Route = "proxy"
	RouteAgentAddr Route = "agent_addr"
)

// Client is the control plane's client. Every answer, errors included,
// must carry a valid X-Service-Signature before anything of it is read;
// one that does not is a *SignatureError. Safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client
	v    *verifier

	mu      sync.RWMutex
	token   string
	api     *control.ClientWithResponses
	opt     Options
	agentHC *http.Client // the container handles' (made once)

	// Containers creates, finds and drives containers.
	Containers Containers
}

// New builds a client of the control plane at baseURL (scheme and host,
// e.g. https://deckhand.example.com). Nothing is fetched yet.
func New(baseURL string, o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("deckhand: control plane URL %q: must be http:// or https:// with a host", baseURL)
	}
	base := strings.TrimRight(u.String(), "/")
	hc := cmp.Or(o.HTTPClient, &http.Client{Timeout: 60 * time.Second})
	now := o.Now
	if now == nil {
		now = time.Now
	}
	switch o.AgentRoute {
	case "", RouteProxy, RouteAgentAddr:
	default:
		return nil, fmt.Errorf("deckhand: Options.AgentRoute %q: must be %q or %q", o.AgentRoute, RouteProxy, RouteAgentAddr)
	}
	c := &Client{base: base, hc: hc, token: o.Token, v: &verifier{base: base, hc: hc, now: now, cache: o.KeyCache}, opt: o}
	c.Containers = Containers{c}
	c.api, err = control.NewClientWithResponses(base, control.WithHTTPClient(c))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// BaseURL is the control plane's URL.
func (c *Client) BaseURL() string { return c.base }

// API is the client generated from the control plane's OpenAPI document,
// sending through this Client: its answers are verified and carry the
// token. Use it for any route the methods here do not cover.
func (c *Client) API() *control.ClientWithResponses { return c.api }

// SetToken replaces the bearer credential.
func (c *Client) SetToken(token string) {
	c.mu.Lock()
	c.token = token
	c.mu.Unlock()
}

// Token is the bearer credential in use.
func (c *Client) Token() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.token
}

// Do sends req with the token (unless req has an Authorization header)
// and a fresh X-Service-Nonce, reads the whole answer and verifies it:
// its X-Service-Signature, its X-Service-Binding to this request (status,
// method, path, ETag, nonce, body) and that an envelope's statusCode is
// the status it came with. The answer's body is the verified bytes. It makes Client an HttpRequestDoer of the generated
// clients.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	resp, raw, err := c.exchange(req)
	if err != nil {
		return nil, err
	}
	if err := checkEnvelopeStatus(resp.StatusCode, raw); err != nil {
		return nil, &SignatureError{Method: req.Method, Path: req.URL.EscapedPath(), Err: err}
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	resp.ContentLength = int64(len(raw))
	return resp, nil
}

// exchange is Do but for the envelope's status, which Send checks in the
// one pass that also reads the envelope: it sends req, reads the whole
// answer and verifies its signature and binding.
func (c *Client) exchange(req *http.Request) (*http.Response, []byte, error) {
	if req.Header.Get("Authorization") == "" {
		if tok := c.Token(); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	nonce := newNonce()
	req.Header.Set(NonceHeader, nonce)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	raw, err := readAnswer(resp)
	if err != nil {
		return nil, nil, fmt.Errorf("deckhand: reading the answer to %s %s: %w", req.Method, req.URL.Path, err)
	}
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	err = c.v.verify(req.Context(), resp.Header.Get(SignatureHeader), path, raw)
	if err == nil {
		err = c.v.verifyBinding(req.Context(), resp.Header.Get(BindingHeader), binding{status: resp.StatusCode,
			method: req.Method, path: path, etag: resp.Header.Get("ETag"), nonce: nonce, body: raw})
	}
	if err != nil {
		return nil, nil, &SignatureError{Method: req.Method, Path: path, Err: err}
	}
	return resp, raw, nil
}

// readAnswer reads a whole answer of at most MaxAnswer bytes, into one
// buffer of its length when the server says it.
func readAnswer(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	if n := resp.ContentLength; n >= 0 && n <= MaxAnswer {
		raw := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, raw); err != nil {
			return nil, err
		}
		return raw, nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err == nil && len(raw) > MaxAnswer {
		err = fmt.Errorf("the answer is over %d bytes", MaxAnswer)
	}
	return raw, err
}

// Call sends a JSON request to path (/api/v1/...) and decodes the
// envelope's data into out (when not nil). A status of 400 or more is an
// *Error with the server's code.
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	_, err := c.send(ctx, Request{Method: method, Path: path, Query: query, Body: body}, out)
	return err
}

// ErrSecondFactor is returned by Login for an account with two-factor
// authentication: finish with LoginSecondFactor.
var ErrSecondFactor = errors.New("deckhand: the account needs its second factor (LoginSecondFactor)")

// Login signs email in with password and keeps the session token for
// the calls that follow. An account with 2FA answers ErrSecondFactor with
// the temp token in the result.
func (c *Client) Login(ctx context.Context, email, password string) (*control.LoginResult, error) {
	var r control.LoginResult
	if err := c.Call(ctx, http.MethodPost, "/api/v1/users/auth/login", nil,
		control.LoginInput{Email: &email, Password: password}, &r); err != nil {
		return nil, err
	}
	if r.Requires2fa != nil && *r.Requires2fa {
		return &r, ErrSecondFactor
	}
	if r.Token == nil || *r.Token == "" {
		return nil, fmt.Errorf("deckhand: login answered no token")
	}
	c.SetToken(*r.Token)
	return &r, nil
}

// Me is the signed-in user.
func (c *Client) Me(ctx context.Context) (*control.User, error) {
	var u control.User
	if err := c.Call(ctx, http.MethodGet, "/api/v1/users/auth/me", nil, nil, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// CreateToken creates a long-lived auth token (svc_...); its secret is in
// Token, shown this once. ipWhitelist (optional) limits where it is used
// from.
func (c *Client) CreateToken(ctx context.Context, alias string, ipWhitelist ...string) (*control.AuthToken, error) {
	in := control.CreateTokenInput{Alias: alias}
	if len(ipWhitelist) > 0 {
		in.IpWhitelist = &ipWhitelist
	}
	var t control.AuthToken
	if err := c.Call(ctx, http.MethodPost, "/api/v1/auth/tokens", nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TransferToAI moves amount (a decimal string such as "2.50") from the
// general balance to AI credit. idempotencyKey (optional) makes a retry
// answer the first transfer instead of making a second.
func (c *Client) TransferToAI(ctx context.Context, amount, idempotencyKey string) (*control.Receipt, error) {
	in := control.TransferInput{Amount: amount}
	if idempotencyKey != "" {
		in.IdempotencyKey = &idempotencyKey
	}
	var r control.Receipt
	if err := c.Call(ctx, http.MethodPost, "/api/v1/wallet/transfer-to-ai", nil, in, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DefaultPageSize is the page size the list iterators ask for when
// given 0 (the server's largest).
const DefaultPageSize = 100

// Transactions iterates over the wallet's transactions, newest first,
// fetching pageSize at a time (0: DefaultPageSize). Stop ranging to stop fetching; an error ends
// the iteration with it.
func (c *Client) Transactions(ctx context.Context, pageSize int) iter.Seq2[control.Transaction, error] {
	return Pages[control.Transaction](ctx, c, "/api/v1/wallet/transactions", nil, "transactions", pageSize)
}

// Invoices iterates over the wallet's invoices, newest first.
func (c *Client) Invoices(ctx context.Context, pageSize int) iter.Seq2[control.Invoice, error] {
	return Pages[control.Invoice](ctx, c, "/api/v1/wallet/invoices", nil, "invoices", pageSize)
}

// GenerateInvoice numbers the invoice of a transaction (or answers the
// one it already has).
func (c *Client) GenerateInvoice(ctx context.Context, transactionID string) (*control.Generated, error) {
	var g control.Generated
	if err := c.Call(ctx, http.MethodPost, "/api/v1/wallet/invoices/generate/"+url.PathEscape(transactionID), nil, nil, &g); err != nil {
		return nil, err
	}
	if g.InvoiceId == nil {
		return nil, fmt.Errorf("deckhand: generate invoice: the answer names no invoice")
	}
	return &g, nil
}

// InvoicePDF writes invoice id's PDF to w (the answer is verified before
// a byte is written) and answers its size.
func (c *Client) InvoicePDF(ctx context.Context, id string, w io.Writer) (int64, error) {
	path := "/api/v1/wallet/invoices/" + url.PathEscape(id) + "/pdf"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode >= 400 {
		raw, _ := io.ReadAll(resp.Body)
		return 0, errorOf(http.MethodGet, path, resp.StatusCode, raw)
	}
	return io.Copy(w, resp.Body)
}

// Pages iterates over every item of a paginated control-plane list (an
// answer whose data holds the items under field and a pagination object:
// transactions, invoices, ai-fees, events, images, projects, containers),
// fetching pageSize at a time (0: DefaultPageSize) with query added to
// each request. Stop ranging to stop fetching; an error ends the
// iteration with it.
func Pages[T any](ctx context.Context, c *Client, path string, query url.Values, field string, pageSize int) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if pageSize <= 0 {
			pageSize = DefaultPageSize
		}
		for page := 1; ; page++ {
			q := url.Values{}
			maps.Copy(q, query)
			q.Set("page", strconv.Itoa(page))
			q.Set("limit", strconv.Itoa(pageSize))
			var data map[string]json.RawMessage
			if err := c.Call(ctx, http.MethodGet, path, q, nil, &data); err != nil {
				yield(zero, err)
				return
			}
			var items []T
			var p control.Pagination
			err := json.Unmarshal(data[field], &items)
			if err == nil && data["pagination"] != nil {
				err = json.Unmarshal(data["pagination"], &p)
			}
			if err != nil {
				yield(zero, fmt.Errorf("deckhand: GET %s page %d: %w", path, page, err))
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if len(items) == 0 || p.TotalPages == nil || page >= *p.TotalPages {
				return
			}
		}
	}
}
