package identitytest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// The client credentials the Provider accepts.
const ClientID, ClientSecret = "client-123", "secret-456"

// Provider stands in for an outside OAuth provider: authorize, token
// (enforcing the server's PKCE S256 verifier and client credentials),
// userinfo, and a GitHub-style star check that answers 204 for "octo".
type Provider struct {
	URL    string // base URL of the endpoints, on loopback
	mu     sync.Mutex
	codes  map[string]grant
	tokens map[string]map[string]any
	user   map[string]any
}

type grant struct {
	challenge, redirect string
	user                map[string]any
}

// NewProvider starts a provider whose userinfo answers user until SetUser;
// it stops with the test.
func NewProvider(t testing.TB, user map[string]any) *Provider {
	p := &Provider{codes: map[string]grant{}, tokens: map[string]map[string]any{}, user: user}
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p.mu.Lock()
		defer p.mu.Unlock()
		if q.Get("response_type") != "code" || q.Get("client_id") != ClientID || q.Get("code_challenge_method") != "S256" ||
			len(q.Get("code_challenge")) != 43 || q.Get("state") == "" || q.Get("redirect_uri") == "" {
			http.Error(w, "bad authorize request", 400)
			return
		}
		code := "code-" + q.Get("state")[:8]
		p.codes[code] = grant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), user: p.user}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		g, found := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if id != ClientID || secret != ClientSecret || !found || r.PostForm.Get("grant_type") != "authorization_code" ||
			r.PostForm.Get("redirect_uri") != g.redirect || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		tok := "at-" + r.PostForm.Get("code")
		p.tokens[tok] = g.user
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": 3600})
	})
	mux.HandleFunc("/user/starred/deckhand/deckhand", func(w http.ResponseWriter, r *http.Request) {
		u, ok := p.tokenUser(r)
		if ok && u["login"] == "octo" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	})
	mux.HandleFunc("/userinfo", func(w http.ResponseWriter, r *http.Request) {
		u, ok := p.tokenUser(r)
		if !ok {
			http.Error(w, "no", 401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(u)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetUser changes who signs in at the provider from now on.
func (p *Provider) SetUser(user map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.user = user
}

func (p *Provider) tokenUser(r *http.Request) (map[string]any, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	return u, ok
}
