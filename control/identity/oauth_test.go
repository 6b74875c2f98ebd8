package identity_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/control/identity"
	"deckhand/control/identity/identitytest"
)

// providerConfig points identity at the provider stand-in.
func providerConfig(p *identitytest.Provider) identity.OAuthProvider {
	return identity.OAuthProvider{ClientID: identitytest.ClientID, ClientSecret: identitytest.ClientSecret, AuthURL: p.URL + "/authorize",
		TokenURL: p.URL + "/token", UserInfoURL: p.URL + "/userinfo", StarCheckURL: p.URL + "/user/starred/deckhand/deckhand"}
}

func oauthEnv(t *testing.T) (*env, *identitytest.Provider) {
	p := identitytest.NewProvider(t, map[string]any{"id": 4242, "login": "octo", "email": "octo@example.com"})
	e := newEnv(t, func(d *identity.Deps) {
		d.Providers = map[string]identity.OAuthProvider{"codehost": providerConfig(p)}
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
	if !strings.HasPrefix(toProvider.String(), p.URL+"/authorize") || q.Get("code_challenge") == rfcChallenge ||
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
	p.SetUser(map[string]any{"id": 7, "login": "nostar", "email": "nostar@example.com"})
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

func launchEnv(t *testing.T) (*env, *identitytest.Provider) {
	return oauthEnv(t)
}

func (e *env) initiate(origin string) resp {
	e.t.Helper()
	return e.initiateState(origin, "3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b")
}

func (e *env) initiateState(origin, stateID string) resp {
	e.t.Helper()
	hdr := []string{}
	if origin != "" {
		hdr = append(hdr, "Origin", origin)
	}
	return e.call("POST", "/api/v1/auth/launch/initiate", map[string]any{"provider": "codehost", "code_challenge": rfcChallenge,
		"state_id": stateID}, "", hdr...)
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
	if res.Header.Get("Referrer-Policy") != "no-referrer" || !strings.HasPrefix(toProvider.String(), p.URL) {
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
	// A state_id names one attempt: a second ticket for it is refused.
	if r := e.initiate("http://localhost:5173"); r.status != 409 || !strings.Contains(r.str("message"), "state_id") {
		t.Fatalf("reused state_id: %d %s", r.status, r.raw)
	}
	// Expiry, unknown tickets, and a different Origin.
	launch = e.must(e.initiateState("http://localhost:5173", "5d0c6b1a-8e7f-4a3b-9c2d-1e0f9a8b7c6d"), 200).str("data", "launch_url")
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
