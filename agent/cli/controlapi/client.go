// Package controlapi is the deckhand CLI's client of the control plane:
// the config file that `deckhand login` writes (control URL and
// credential, 0600), a key cache beside it, and an HTTP client that
// verifies the X-Service-Signature of every answer with platform/signing's
// Verifier before it reads a byte of it, refreshes an expired session once,
// and turns the error envelope into an *APIError carrying the server's
// message.
package controlapi

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
	"time"

	"deckhand/platform/signing"
)

// MaxBody bounds an answer the client reads (an invoice PDF is the largest).
const MaxBody = 64 << 20

// APIError is an answer with the control plane's error envelope.
type APIError struct {
	Status  int    // HTTP status
	Code    string // the envelope's error
	Message string // the envelope's message, shown to the user as it is
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

// SignatureError means an answer did not carry a valid signature of the
// control plane: it was altered on the way, or did not come from it.
type SignatureError struct {
	Method, Path string
	Err          error
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("refusing the control plane's answer to %s %s: %v", e.Method, e.Path, e.Err)
}

func (e *SignatureError) Unwrap() error { return e.Err }

// ErrNotLoggedIn is returned by commands that need a credential when the
// config holds none.
var ErrNotLoggedIn = errors.New("not logged in: run `deckhand login URL` first")

// Options configures a Client.
type Options struct {
	// ControlURL is the control plane's base URL (scheme, host, port).
	ControlURL string
	// ConfigPath is the config file; its key cache lives beside it, and a
	// refreshed session is saved to it.
	ConfigPath string
	// Config holds the credential (nil: none, as for login).
	Config *Config
	// HTTP is the client to use (nil: one with a 60 s timeout).
	HTTP *http.Client
	// Now is the clock of the key cache (nil: time.Now).
	Now func() time.Time
}

// Client talks to one control plane.
type Client struct {
	base     string
	http     *http.Client
	verifier *signing.Verifier
	cfg      *Config
	cfgPath  string
}

// New checks the URL and builds the client; nothing is fetched yet.
func New(o Options) (*Client, error) {
	base, err := NormalizeURL(o.ControlURL)
	if err != nil {
		return nil, err
	}
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	kc := &keyCache{path: KeyCachePath(o.ConfigPath), url: base, now: now}
	// MinRefetch stays 0: a CLI process is short, and the first key set it
	// uses may come from the cache, so the first unknown kid (after a key
	// rotation) must be allowed to fetch at once.
	v := signing.NewVerifier(signing.VerifierOptions{Source: kc.source(signing.HTTPKeySource(hc, base))})
	cfg := o.Config
	if cfg == nil {
		cfg = &Config{}
	}
	return &Client{base: base, http: hc, verifier: v, cfg: cfg, cfgPath: o.ConfigPath}, nil
}

// NormalizeURL checks a control-plane URL: http or https, a host, no query;
// a trailing slash is dropped.
func NormalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("control URL %q: must be http:// or https:// with a host, e.g. http://127.0.0.1:8080", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// BaseURL is the control plane's URL.
func (c *Client) BaseURL() string { return c.base }

// Request is one call.
type Request struct {
	Method string
	Path   string // /api/v1/...
	Query  url.Values
	Body   any // marshalled to JSON; nil sends none
	Header http.Header
	// Bearer overrides the credential (a 2FA temp_token); Anonymous sends
	// none.
	Bearer    string
	Anonymous bool
}

// Response is a verified answer.
type Response struct {
	Status  int
	Header  http.Header
	Body    []byte          // the exact bytes the signature covers
	Message string          // the envelope's message
	Data    json.RawMessage // the envelope's data, as sent
}

// Do sends r, verifies the answer's signature and decodes its envelope. A
// status of 400 or more is an *APIError with the server's message. A
// session whose access token was refused is refreshed once and r sent
// again.
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = json.Marshal(r.Body); err != nil {
			return nil, err
		}
	}
	resp, err := c.send(ctx, r, body)
	if err != nil {
		return nil, err
	}
	var apiErr *APIError
	if errors.As(resp.err, &apiErr) && apiErr.Status == http.StatusUnauthorized && c.canRefresh(r) {
		if rerr := c.refresh(ctx); rerr != nil {
			return nil, rerr
		}
		if resp, err = c.send(ctx, r, body); err != nil {
			return nil, err
		}
	}
	return &resp.Response, resp.err
}

type result struct {
	Response
	err error
}

func (c *Client) send(ctx context.Context, r Request, body []byte) (result, error) {
	u := c.base + r.Path
	if len(r.Query) > 0 {
		u += "?" + r.Query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u, rd)
	if err != nil {
		return result{}, err
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	switch {
	case r.Bearer != "":
		req.Header.Set("Authorization", "Bearer "+r.Bearer)
	case !r.Anonymous && c.cfg.Credential != nil:
		req.Header.Set("Authorization", "Bearer "+c.cfg.Credential.Token)
	}
	hr, err := c.http.Do(req)
	if err != nil {
		return result{}, fmt.Errorf("cannot reach the control plane at %s: %w", c.base, err)
	}
	defer hr.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(hr.Body, MaxBody+1))
	if err != nil {
		return result{}, fmt.Errorf("control plane %s: reading the answer to %s %s: %w", c.base, r.Method, r.Path, err)
	}
	if len(raw) > MaxBody {
		return result{}, fmt.Errorf("control plane %s: the answer to %s %s is over %d bytes", c.base, r.Method, r.Path, MaxBody)
	}
	_, err = c.verifier.VerifyResponse(hr, raw)
	if errors.Is(err, signing.ErrUnknownKey) {
		// The first set a process looks at may be the cached one; a kid it
		// does not hold (after a key rotation) gets one fetch from the
		// control plane itself.
		_, err = c.verifier.VerifyResponse(hr, raw)
	}
	if errors.Is(err, signing.ErrMissing) {
		err = fmt.Errorf("%w (a control plane signs every answer unless it runs with --signing=false, which this client does not accept)", err)
	}
	if err != nil {
		return result{}, &SignatureError{Method: r.Method, Path: req.URL.EscapedPath(), Err: err}
	}
	out := result{Response: Response{Status: hr.StatusCode, Header: hr.Header, Body: raw}}
	if !isJSON(hr.Header.Get("Content-Type")) {
		if hr.StatusCode >= 400 {
			out.err = &APIError{Status: hr.StatusCode, Message: strings.TrimSpace(string(raw))}
		}
		return out, nil
	}
	var env struct {
		StatusCode int             `json:"statusCode"`
		Error      string          `json:"error"`
		Message    string          `json:"message"`
		Data       json.RawMessage `json:"data"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &env); err != nil {
			return result{}, fmt.Errorf("control plane %s: the answer to %s %s is not its JSON envelope: %w", c.base, r.Method, r.Path, err)
		}
	}
	out.Message, out.Data = env.Message, env.Data
	if hr.StatusCode >= 400 {
		msg := env.Message
		if msg == "" {
			msg = http.StatusText(hr.StatusCode)
		}
		out.err = &APIError{Status: hr.StatusCode, Code: env.Error, Message: msg}
	}
	return out, nil
}

func isJSON(ct string) bool {
	return strings.HasPrefix(ct, "application/json") || strings.Contains(ct, "+json")
}

func (c *Client) canRefresh(r Request) bool {
	cr := c.cfg.Credential
	return !r.Anonymous && r.Bearer == "" && cr != nil && cr.Kind == KindSession && cr.RefreshToken != ""
}

// refresh rotates the session's tokens (the refresh token goes in the
// header and the body, byte for byte) and saves them.
func (c *Client) refresh(ctx context.Context) error {
	cr := c.cfg.Credential
	resp, err := c.send(ctx, Request{Method: http.MethodPost, Path: "/api/v1/users/auth/refresh",
		Bearer: cr.RefreshToken}, mustJSON(map[string]string{"refreshToken": cr.RefreshToken}))
	if err != nil {
		return err
	}
	if resp.err != nil {
		return fmt.Errorf("the session has ended (%v): run `deckhand login %s` again", resp.err, c.base)
	}
	var lr LoginResult
	if err := json.Unmarshal(resp.Data, &lr); err != nil || lr.Token == "" || lr.RefreshToken == "" {
		return fmt.Errorf("control plane %s: the refresh answer holds no tokens", c.base)
	}
	cr.Token, cr.RefreshToken, cr.ExpiresAt = lr.Token, lr.RefreshToken, lr.ExpiresAt
	if c.cfgPath != "" {
		return c.cfg.Save(c.cfgPath)
	}
	return nil
}

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// LoginResult is the data of login, 2FA verify and refresh.
type LoginResult struct {
	Token        string          `json:"token"`
	RefreshToken string          `json:"refreshToken"`
	ExpiresAt    string          `json:"expires_at"`
	User         json.RawMessage `json:"user"`
	Requires2FA  bool            `json:"requires_2fa"`
	TempToken    string          `json:"temp_token"`
}

// User is the part of the profile the CLI keeps.
type User struct {
	ID       string `json:"id"`
	Email    string `json:"email"`
	Username string `json:"username"`
}

// FetchKeys makes sure the control plane's key set is known (fetching and
// caching it when the cache has none), so login fails early against a
// server that does not sign or whose key set was altered.
func (c *Client) FetchKeys(ctx context.Context) error {
	_, err := c.Do(ctx, Request{Method: http.MethodGet, Path: signing.PublicKeyPath, Anonymous: true})
	return err
}
