package access

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"deckhand/platform/signing"
)

// Control is the agent's verified channel to the control plane: its URL,
// the container's credential (--token) and the verifier of the control
// plane's signatures. The proxy permissions sync uses it, and so does
// every other sync of the agent (the network configuration in
// agent/egress), so all of them share one token, one key set and one
// rule: nothing whose signature fails is returned.
type Control struct {
	URL, ContainerID, Token string
	// TokenFile is where Token came from (--token-file): read again when
	// the control plane refuses Token (token.go).
	TokenFile string
	Client    *http.Client
	Verifier  *signing.Verifier

	credOnce sync.Once
	cred     *credential
}

// Control is the channel the authorizer syncs through; nil without
// --control-url.
func (a *Authorizer) Control() *Control { return a.control }

// Get asks path (If-None-Match etag when set) and returns the status and
// body of an answer whose signature and binding verified (verify). A body
// over max bytes is refused.
func (c *Control) Get(ctx context.Context, path, etag string, max int) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if etag != "" {
		req.Header.Set("If-None-Match", `"`+etag+`"`)
	}
	status, body, got, err := c.do(req, max)
	// The binding signs the ETag a 304 carries: it must be the one asked
	// about, so a 304 confirms exactly what is in force.
	if err == nil && status == http.StatusNotModified && (etag == "" || got != `"`+etag+`"`) {
		return 0, nil, fmt.Errorf("%w: a 304 confirming ETag %s, asked about %q", ErrUnverified, got, etag)
	}
	return status, body, err
}

// Post sends v as JSON to path and returns the verified answer.
func (c *Control) Post(ctx context.Context, path string, v any, max int) (int, []byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	status, body, _, err := c.do(req, max)
	return status, body, err
}

// do sends req with a fresh nonce and returns the answer (status, body,
// ETag header) only when it is bound to that request (verify).
func (c *Control) do(req *http.Request, max int) (int, []byte, string, error) {
	used := c.credential().get()
	status, body, etag, err := c.send(req, used, max)
	if err != nil || status != http.StatusUnauthorized {
		return status, body, etag, err
	}
	fresh := c.cred.renew(used)
	if fresh == "" {
		return status, body, etag, err
	}
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return 0, nil, "", err
		}
	}
	return c.send(retry, fresh, max)
}

// credential is the token in force, made from Token and TokenFile the
// first time.
func (c *Control) credential() *credential {
	c.credOnce.Do(func() { c.cred = &credential{token: c.Token, file: c.TokenFile} })
	return c.cred
}

// send sends req with token and a fresh nonce (do).
func (c *Control) send(req *http.Request, token string, max int) (int, []byte, string, error) {
	req.Header.Set("Authorization", "Bearer "+token)
	nonce := rand.Text()
	req.Header.Set(signing.NonceHeader, nonce)
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, nil, "", fmt.Errorf("control plane unreachable: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	if err != nil {
		return 0, nil, "", fmt.Errorf("read the control plane's answer: %w", err)
	}
	if len(body) > max {
		return 0, nil, "", fmt.Errorf("control plane answer larger than %d bytes", max)
	}
	if err := verify(c.Verifier, resp, body, nonce); err != nil {
		return 0, nil, "", fmt.Errorf("%w: %v", ErrUnverified, err)
	}
	return resp.StatusCode, body, resp.Header.Get("ETag"), nil
}

// verify accepts an answer only when it is bound to the request that
// carried nonce: X-Service-Signature over the body, the binding over
// status, method, path, ETag, nonce and body (a signed answer replayed,
// or passed on under another status or for another path, fails), and a
// body that says the status it came with: a 304 has none, anything else
// is an envelope whose statusCode is the HTTP status (a 404 counts only
// as a signed 404 body).
func verify(v *signing.Verifier, resp *http.Response, body []byte, nonce string) error {
	if err := v.VerifyBoundResponse(resp, body, nonce); err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotModified {
		if len(body) != 0 {
			return errors.New("a 304 answer carries a body")
		}
		return nil
	}
	var env struct {
		StatusCode *int `json:"statusCode"`
	}
	if json.Unmarshal(body, &env) != nil || env.StatusCode == nil {
		return fmt.Errorf("a %d answer whose body is not a control-plane envelope with a statusCode", resp.StatusCode)
	}
	return nil // CheckEnvelopeStatus (in VerifyBoundResponse) compared it
}

// VerifyClaim checks a claim against the control plane's keys and
// decodes its payload into dst.
func (c *Control) VerifyClaim(ctx context.Context, cl signing.Claim, dst any) error {
	return c.Verifier.VerifyClaim(ctx, cl, dst)
}

// Data is the data member of a control-plane envelope.
func Data(body []byte) (json.RawMessage, error) {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) == 0 {
		return nil, errors.New("control plane answer is not a data envelope")
	}
	return env.Data, nil
}

// SaveVerified writes v (a verified answer, which may hold secrets) to
// dir/name atomically, 0600, so a restarted agent puts it back in force
// before the control plane answers.
func SaveVerified(dir, name string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeAtomic(dir, name, raw)
}

// LoadVerified reads what SaveVerified wrote into v; found is false when
// there is nothing.
func LoadVerified(dir, name string, v any) (found bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return true, nil
}

// pollTimeout bounds one exchange with the control plane.
const pollTimeout = 10 * time.Second
