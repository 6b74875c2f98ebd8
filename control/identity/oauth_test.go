package identity_test

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
	"time"

	"deckhand/control/identity"
	"deckhand/control/identity/identitytest"
)

// fakeProvider plays an OAuth provider's authorize, token and userinfo
// endpoints, enforcing PKCE S256 on the server's side of the flow.
type fakeProvider struct {
	srv    *httptest.Server
	mu     sync.Mutex
	codes  map[string]fakeGrant
	tokens map[string]map[string]any
	user   map[string]any
	seen   []url.Values // authorize requests
}

type fakeGrant struct {
	challenge, redirect string
	user                map[string]any
}

const fakeClientID, fakeSecret = "client-123", "secret-456"

func newFakeProvider(t *testing.T) *fakeProvider {
	p := &fakeProvider{codes: map[string]fakeGrant{}, tokens: map[string]map[string]any{},
		user: map[string]any{"id": 4242, "login": "octo", "email": "octo@example.com"}}
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.seen = append(p.seen, q)
		if q.Get("response_type") != "code" || q.Get("client_id") != fakeClientID || q.Get("code_challenge_method") != "S256" ||
			len(q.Get("code_challenge")) != 43 || q.Get("state") == "" || q.Get("redirect_uri") == "" {
			http.Error(w, "bad authorize request", 400)
			return
		}
		code := "code-" + q.Get("state")[:8]
		p.codes[code] = fakeGrant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), user: p.user}
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
		if id != fakeClientID || secret != fakeSecret || !found || r.PostForm.Get("grant_type") != "authorization_code" ||
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
		p.mu.Lock()
		u, ok := p.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		p.mu.Unlock()
		if ok && u["login"] == "octo" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	})
	mux.HandleFunc("/userinfo", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		u, ok := p.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		p.mu.Unlock()
		if !ok {
			http.Error(w, "no", 401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(u)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProvider) config() identity.OAuthProvider {
	return identity.OAuthProvider{ClientID: fakeClientID, ClientSecret: fakeSecret, AuthURL: p.srv.URL + "/authorize",
		TokenURL: p.srv.URL + "/token", UserInfoURL: p.srv.URL + "/userinfo", StarCheckURL: p.srv.URL + "/user/starred/deckhand/deckhand"}
}

func oauthEnv(t *testing.T) (*env, *fakeProvider) {
	p := newFakeProvider(t)
	e := newEnv(t, func(d *identity.Deps) {
		d.Providers = map[string]identity.OAuthProvider{"codehost": p.config()}
		d.AllowedRedirectDomains = []string{"localhost", "example.test"}
	})
	return e, p
}

// runFlow drives start → provider → callback and returns the completion URL.
func runFlow(t *testing.T, c *http.Client, start string) *url.URL {
	t.Helper()
	toProvider, _ := identitytest.Follow(t, c, start)
	toCallback, _ := identitytest.Follow(t, c, toProvider.String())
	done, _ := identitytest.Follow(t, c, toCallback.String())
	return done
}

func TestOAuthCodehostLoginWithPKCE(t *testing.T) {
	t.Parallel()
	e, p := oauthEnv(t)
	b := identitytest.Browser()
	start := e.url + "/api/v1/auth/codehost?code_challenge=" + rfcChallenge + "&redirect_uri=" + url.QueryEscape("http://localhost:3000/done")
	toProvider, _ := identitytest.Follow(t, b, start)
	q := toProvider.Query()
	if !strings.HasPrefix(toProvider.String(), p.srv.URL+"/authorize") || q.Get("code_challenge") == rfcChallenge ||
		q.Get("redirect_uri") != e.url+"/api/v1/auth/codehost/callback" {
		t.Fatalf("provider redirect: %s", toProvider)
	}
	toCallback, _ := identitytest.Follow(t, b, toProvider.String())
	done, _ := identitytest.Follow(t, b, toCallback.String())
	if done.Host != "localhost:3000" || done.Path != "/done" || done.Query().Get("code") == "" || done.Query().Get("provider") != "codehost" {
		t.Fatalf("completion: %s", done)
	}
	// The state is single use: replaying the callback fails.
	r := e.callWith(b, "GET", toCallback.String(), nil, "")
	if r.status != 400 || !strings.Contains(r.str("message"), "state") {
		t.Fatalf("replayed callback: %d %s", r.status, r.raw)
	}
	code := done.Query().Get("code")
	res := e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"code": code, "code_verifier": rfcVerifier}, ""), 200).data()
	me := e.must(e.call("GET", "/api/v1/users/auth/me", nil, res["token"].(string)), 200).data()
	if me["email"] != "octo@example.com" || me["username"] != "octo" || me["email_verified"] != true {
		t.Fatalf("me: %v", me)
	}
	// A second login finds the same account.
	done = runFlow(t, identitytest.Browser(), start)
	res = e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"code": done.Query().Get("code"), "code_verifier": rfcVerifier}, ""), 200).data()
	if res["user"].(map[string]any)["id"] != me["id"] {
		t.Fatal("second OAuth login made a new account")
	}
	// A wrong verifier burns the code.
	done = runFlow(t, identitytest.Browser(), start)
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"code": done.Query().Get("code"), "code_verifier": strings.Repeat("x", 43)}, ""), 401)
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"code": done.Query().Get("code"), "code_verifier": rfcVerifier}, ""), 401)
	// star_check rides along.
	done = runFlow(t, identitytest.Browser(), start+"&intent=star_check")
	if done.Query().Get("intent") != "star_check" || done.Query().Get("starred") != "true" {
		t.Fatalf("intent: %s", done)
	}
	p.mu.Lock()
	p.user = map[string]any{"id": 7, "login": "nostar", "email": "nostar@example.com"}
	p.mu.Unlock()
	done = runFlow(t, identitytest.Browser(), start+"&intent=star_check")
	if done.Query().Get("starred") != "false" || done.Query().Get("code") == "" {
		t.Fatalf("star check for a non-stargazer: %s", done)
	}
}

func TestOAuthStateBoundToBrowser(t *testing.T) {
	t.Parallel()
	e, _ := oauthEnv(t)
	start := e.url + "/api/v1/auth/codehost?code_challenge=" + rfcChallenge
	b := identitytest.Browser()
	toProvider, _ := identitytest.Follow(t, b, start)
	toCallback, _ := identitytest.Follow(t, b, toProvider.String())
	// An attacker's browser (no binding cookie) cannot complete it.
	r := e.callWith(identitytest.Browser(), "GET", toCallback.String(), nil, "")
	if r.status != 400 || !strings.Contains(r.str("message"), "state") {
		t.Fatalf("foreign browser: %d %s", r.status, r.raw)
	}
	// Forged state.
	r = e.callWith(b, "GET", e.url+"/api/v1/auth/codehost/callback?code=x&state=forged", nil, "")
	if r.status != 400 {
		t.Fatalf("forged state: %d %s", r.status, r.raw)
	}
}

func TestOAuthStartValidation(t *testing.T) {
	t.Parallel()
	e, _ := oauthEnv(t)
	cases := []struct {
		path   string
		status int
		want   string
	}{
		{"/api/v1/auth/codehost", 400, "code_challenge: is required"},
		{"/api/v1/auth/codehost?code_challenge=short", 400, "code_challenge: must be 43 to 128"},
		{"/api/v1/auth/codehost?code_challenge=" + rfcChallenge + "&redirect_uri=" + url.QueryEscape("https://evil.com/x"), 400, "redirect_uri: must be on an allowed domain"},
		{"/api/v1/auth/codehost?code_challenge=" + rfcChallenge + "&redirect_uri=" + url.QueryEscape("https://localhost.evil.com/x"), 400, "redirect_uri"},
		{"/api/v1/auth/codehost?code_challenge=" + rfcChallenge + "&intent=steal", 400, "intent"},
		{"/api/v1/auth/webid?code_challenge=" + rfcChallenge, 503, "not configured"},
		{"/api/v1/auth/codehost/callback?state=x", 400, "code: is required"},
	}
	for _, tc := range cases {
		r := e.call("GET", tc.path, nil, "")
		if r.status != tc.status || !strings.Contains(r.str("message"), tc.want) {
			t.Errorf("%s: %d %s", tc.path, r.status, r.raw)
		}
	}
	// Subdomains of an allowed domain are allowed.
	identitytest.Follow(t, identitytest.Browser(), e.url+"/api/v1/auth/codehost?code_challenge="+rfcChallenge+"&redirect_uri="+url.QueryEscape("https://app.example.test/cb"))
}

func TestOAuthLinksExistingAccountAndHonours2FA(t *testing.T) {
	t.Parallel()
	e, p := oauthEnv(t)
	login := e.account("octo@example.com")
	e.enable2FA(login["token"].(string))
	done := runFlow(t, identitytest.Browser(), e.url+"/api/v1/auth/codehost?code_challenge="+rfcChallenge)
	q := done.Query()
	if q.Get("requires_2fa") != "true" || q.Get("temp_token") == "" || q.Get("code") != "" || done.Path != "/auth/complete" {
		t.Fatalf("completion: %s", done)
	}
	_ = p
}

func launchEnv(t *testing.T) (*env, *fakeProvider) {
	return oauthEnv(t)
}

func (e *env) initiate(origin string) resp {
	e.t.Helper()
	hdr := []string{}
	if origin != "" {
		hdr = append(hdr, "Origin", origin)
	}
	return e.call("POST", "/api/v1/auth/launch/initiate", map[string]any{"provider": "codehost", "code_challenge": rfcChallenge,
		"state_id": "3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"}, "", hdr...)
}

func TestLaunchTicket(t *testing.T) {
	t.Parallel()
	e, p := launchEnv(t)
	e.must(e.initiate(""), 400)
	if r := e.initiate("https://evil.com"); r.status != 403 {
		t.Fatalf("foreign origin: %d %s", r.status, r.raw)
	}
	for _, bad := range []map[string]any{
		{"provider": "gitlab", "code_challenge": rfcChallenge, "state_id": "3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"},
		{"provider": "codehost", "code_challenge": "abc", "state_id": "3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"},
		{"provider": "codehost", "code_challenge": rfcChallenge, "state_id": "3f1e2d4c-5b6a-1978-8a9b-0c1d2e3f4a5b"},
		{"provider": "codehost", "code_challenge": rfcChallenge},
	} {
		if r := e.call("POST", "/api/v1/auth/launch/initiate", bad, "", "Origin", "http://localhost:5173"); r.status != 400 {
			t.Errorf("%v: %d %s", bad, r.status, r.raw)
		}
	}
	r := e.must(e.initiate("http://localhost:5173"), 200)
	launch := r.str("data", "launch_url")
	if !strings.HasPrefix(launch, e.url+"/api/v1/auth/launch/start?ticket=") {
		t.Fatalf("launch_url: %s", r.raw)
	}
	b := identitytest.Browser()
	toProvider, res := identitytest.Follow(t, b, launch)
	if res.Header.Get("Referrer-Policy") != "no-referrer" || !strings.HasPrefix(toProvider.String(), p.srv.URL) {
		t.Fatalf("launch start: %v %s", res.Header, toProvider)
	}
	toCallback, _ := identitytest.Follow(t, b, toProvider.String())
	done, _ := identitytest.Follow(t, b, toCallback.String())
	if done.Scheme+"://"+done.Host != "http://localhost:5173" || done.Path != "/auth/complete" ||
		done.Query().Get("state_id") != "3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b" || done.Query().Get("code") == "" {
		t.Fatalf("completion: %s", done)
	}
	e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"code": done.Query().Get("code"), "code_verifier": rfcVerifier}, ""), 200)
	// One shot.
	again := e.call("GET", launch, nil, "")
	if again.status != 410 || again.str("error") != "Gone" || again.header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("second start: %d %v %s", again.status, again.header, again.raw)
	}
	// Expiry, unknown tickets, and a different Origin.
	launch = e.must(e.initiate("http://localhost:5173"), 200).str("data", "launch_url")
	if r := e.call("GET", launch, nil, "", "Origin", "http://other.localhost"); r.status != 403 {
		t.Fatalf("other origin: %d %s", r.status, r.raw)
	}
	e.clock.Advance(3 * time.Minute)
	e.must(e.call("GET", launch, nil, ""), 410)
	e.must(e.call("GET", "/api/v1/auth/launch/start?ticket=nope", nil, ""), 410)
	e.must(e.call("GET", "/api/v1/auth/launch/start", nil, ""), 400)
}

func TestLaunchStartConcurrentConsumersExactlyOneWins(t *testing.T) {
	t.Parallel()
	e, _ := launchEnv(t)
	launch := e.must(e.initiate("http://localhost:5173"), 200).str("data", "launch_url")
	const n = 100
	codes := make([]int, n)
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			res, err := c.Get(launch)
			if err != nil {
				codes[i] = -1
				return
			}
			res.Body.Close()
			codes[i] = res.StatusCode
		}(i)
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, s := range codes {
		count[s]++
	}
	if count[302] != 1 || count[410] != n-1 {
		t.Fatalf("status counts %v, want one 302 and %d 410", count, n-1)
	}
}

func TestOAuthClaimsUnverifiedAccountAndDropsItsPassword(t *testing.T) {
	t.Parallel()
	e, _ := oauthEnv(t)
	// Someone registered octo's address but never verified it.
	e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": "octo@example.com", "password": "Attacker-pass-1"}, ""), 200)
	done := runFlow(t, identitytest.Browser(), e.url+"/api/v1/auth/codehost?code_challenge="+rfcChallenge)
	res := e.must(e.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"code": done.Query().Get("code"), "code_verifier": rfcVerifier}, ""), 200).data()
	if res["user"].(map[string]any)["email"] != "octo@example.com" {
		t.Fatalf("user: %v", res["user"])
	}
	e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "octo@example.com", "password": "Attacker-pass-1"}, ""), 401)
}
