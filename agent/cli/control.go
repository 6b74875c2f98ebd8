package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/spf13/cobra"

	"deckhand/agent/cli/privfile"
)

// The control-plane commands speak through the Go SDK's Client, which
// verifies every answer's signature before it reads a byte of it. What
// is the CLI's own is kept here: the config file `deckhand login` writes
// (control URL and credential, 0600), the key set cached beside it, a
// session refreshed once when its access token was refused, and the
// SDK's errors told the way the CLI words them.

// ConfigEnv names the variable that points at the config file.
const ConfigEnv = deckhand.ConfigEnv

// Credential kinds.
const (
	KindSession = "session" // a login's access and refresh tokens
	KindToken   = "token"   // an svc_ auth token
)

// Config is what `deckhand login` keeps: the control plane and the
// credential for it. The file holds secrets, so it is written 0600 in a
// 0700 directory and refused when others may read it.
type Config struct {
	ControlURL string      `json:"control_url,omitempty"`
	Credential *Credential `json:"credential,omitempty"`
}

// Credential is the bearer the client sends.
type Credential struct {
	Kind         string `json:"kind"`
	Token        string `json:"token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	ExpiresAt    string `json:"expires_at,omitempty"`
	UserID       string `json:"user_id,omitempty"`
	Email        string `json:"email,omitempty"`
}

// ConfigPath is $DECKHAND_CONFIG, else $XDG_CONFIG_HOME/deckhand/config.json,
// else ~/.config/deckhand/config.json (the SDK's FromLogin reads it too).
func ConfigPath() (string, error) { return deckhand.LoginFile() }

// KeyCachePath is where the control plane's key set is cached: beside the
// config file, config.json → config.keys.json.
func KeyCachePath(configPath string) string {
	return strings.TrimSuffix(configPath, ".json") + ".keys.json"
}

// StatePath is where unfinished transfers are remembered so a later run
// resumes them: config.json → config.transfers.json.
func StatePath(configPath string) string {
	return strings.TrimSuffix(configPath, ".json") + ".transfers.json"
}

// LoadConfig reads the config at path; a missing file is an empty config.
func LoadConfig(path string) (*Config, error) {
	var c Config
	if err := privfile.Read(path, &c); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &c, nil
		}
		return nil, err
	}
	return &c, nil
}

// Save writes the config at path.
func (c *Config) Save(path string) error { return privfile.Write(path, c) }

// errNotLoggedIn is returned by commands that need a credential when the
// config holds none.
var errNotLoggedIn = errors.New("not logged in: run `deckhand login URL` first")

// keyCache keeps the key sets of the control planes this CLI talks to in
// one file, by control URL, so every command does not fetch them again
// (docs/spec/interface.md: cache at least 24 hours).
type keyCache struct {
	path string
	mu   sync.Mutex
}

type cachedSet struct {
	FetchedAt time.Time       `json:"fetched_at"`
	Set       deckhand.KeySet `json:"set"`
}

func (k *keyCache) LoadKeys(base string) (deckhand.KeySet, time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	all := map[string]cachedSet{}
	if err := privfile.Read(k.path, &all); err != nil {
		return deckhand.KeySet{}, time.Time{}, false
	}
	c, ok := all[base]
	return c.Set, c.FetchedAt, ok
}

// StoreKeys records set; a cache that cannot be written costs a fetch
// next time, nothing more.
func (k *keyCache) StoreKeys(base string, set deckhand.KeySet, at time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	all := map[string]cachedSet{}
	if err := privfile.Read(k.path, &all); err != nil {
		all = map[string]cachedSet{}
	}
	all[base] = cachedSet{FetchedAt: at.UTC(), Set: set}
	_ = privfile.Write(k.path, all)
}

// normalizeURL checks a control-plane URL: http or https, a host, no
// query; a trailing slash is dropped.
func normalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("control URL %q: must be http:// or https:// with a host, e.g. http://127.0.0.1:8080", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// control is a control-plane client, the config it was made from and
// where that lives.
type control struct {
	path   string
	cfg    *Config
	client *deckhand.Client
}

// newControl is a client of the control plane at rawURL sending cfg's
// credential (none: anonymous, as for login), caching keys beside path.
func newControl(rawURL, path string, cfg *Config) (*control, error) {
	base, err := normalizeURL(rawURL)
	if err != nil {
		return nil, err
	}
	o := deckhand.Options{KeyCache: &keyCache{path: KeyCachePath(path)}, AgentRoute: deckhand.RouteAgentAddr}
	if cfg.Credential != nil {
		o.Token = cfg.Credential.Token
	}
	cl, err := deckhand.New(base, o)
	if err != nil {
		return nil, err
	}
	return &control{path: path, cfg: cfg, client: cl}, nil
}

// loadControl reads the config; with needLogin it insists on a credential.
func loadControl(needLogin bool) (*control, error) {
	path, err := ConfigPath()
	if err != nil {
		return nil, err
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if needLogin && (cfg.ControlURL == "" || cfg.Credential == nil) {
		return nil, errNotLoggedIn
	}
	if cfg.ControlURL == "" {
		return &control{path: path, cfg: cfg}, nil
	}
	return newControl(cfg.ControlURL, path, cfg)
}

// baseURL is the control plane's URL.
func (c *control) baseURL() string { return c.client.BaseURL() }

// call sends one request with the logged-in credential.
func (c *control) call(cmd *cobra.Command, r deckhand.Request) (*deckhand.Answer, error) {
	ctx, stop := Context(cmd)
	defer stop()
	return c.send(ctx, r)
}

// send is call under ctx.
func (c *control) send(ctx context.Context, r deckhand.Request) (*deckhand.Answer, error) {
	var a *deckhand.Answer
	err := c.do(ctx, func() error {
		var err error
		a, err = c.client.Send(ctx, r)
		return err
	})
	return a, err
}

// do runs fn, one or more calls of the SDK; when the control plane
// refused the session's access token, the session is refreshed once and
// fn run again. The error is worded for the command line.
func (c *control) do(ctx context.Context, fn func() error) error {
	err := fn()
	var e *deckhand.Error
	if errors.As(err, &e) && e.Status == http.StatusUnauthorized && c.canRefresh() {
		if rerr := c.refresh(ctx); rerr != nil {
			return explainControl(c.baseURL(), rerr)
		}
		err = fn()
	}
	return explainControl(c.baseURL(), err)
}

func (c *control) canRefresh() bool {
	cr := c.cfg.Credential
	return cr != nil && cr.Kind == KindSession && cr.RefreshToken != ""
}

// loginResult is the data of login, 2FA verify and refresh.
type loginResult struct {
	Token        string          `json:"token"`
	RefreshToken string          `json:"refreshToken"`
	ExpiresAt    string          `json:"expires_at"`
	User         json.RawMessage `json:"user"`
	Requires2FA  bool            `json:"requires_2fa"`
	TempToken    string          `json:"temp_token"`
}

// refresh rotates the session's tokens (the refresh token goes in the
// header and the body) and saves them.
func (c *control) refresh(ctx context.Context) error {
	cr := c.cfg.Credential
	a, err := c.client.Send(ctx, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/users/auth/refresh",
		Header: http.Header{"Authorization": {"Bearer " + cr.RefreshToken}}, Body: map[string]string{"refreshToken": cr.RefreshToken}})
	var e *deckhand.Error
	if errors.As(err, &e) {
		return fmt.Errorf("the session has ended (%v): run `deckhand login %s` again", explainControl(c.baseURL(), err), c.baseURL())
	}
	if err != nil {
		return err
	}
	var lr loginResult
	if err := json.Unmarshal(a.Data, &lr); err != nil || lr.Token == "" || lr.RefreshToken == "" {
		return fmt.Errorf("control plane %s: the refresh answer holds no tokens", c.baseURL())
	}
	cr.Token, cr.RefreshToken, cr.ExpiresAt = lr.Token, lr.RefreshToken, lr.ExpiresAt
	c.client.SetToken(lr.Token)
	return c.cfg.Save(c.path)
}

// controlError is the control plane's error answer as the CLI shows it:
// its message, code and status.
type controlError struct{ e *deckhand.Error }

func (e controlError) Error() string {
	if e.e.Code == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.e.Message, e.e.Status)
	}
	return fmt.Sprintf("%s (%s, HTTP %d)", e.e.Message, e.e.Code, e.e.Status)
}

func (e controlError) Unwrap() error { return e.e }

// explainControl words an error of the SDK's control-plane client for the
// command line, saying what to do next where the error does not.
func explainControl(base string, err error) error {
	if err == nil {
		return nil
	}
	var (
		e  *deckhand.Error
		se *deckhand.SignatureError
		ue *url.Error
	)
	switch {
	case errors.As(err, new(controlError)), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &e):
		return controlError{e}
	case errors.As(err, &se):
		why := se.Err
		if errors.Is(why, deckhand.ErrSignatureMissing) {
			why = fmt.Errorf("%w (a control plane signs every answer unless it runs with --signing=false, which this client does not accept)", why)
		}
		return fmt.Errorf("refusing the control plane's answer to %s %s: %w", se.Method, se.Path, why)
	case errors.As(err, &ue):
		return fmt.Errorf("cannot reach the control plane at %s: %w (check the URL and that it runs; `deckhand login URL` changes it)", base, ue.Err)
	}
	return err
}
