package identitye2e_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/control/identity/identitytest"
)

// providerFlags points the server's provider name at the stand-in.
func providerFlags(p *identitytest.Provider, name string) []string {
	return []string{"--oauth-" + name + "-client-id", identitytest.ClientID, "--oauth-" + name + "-client-secret", identitytest.ClientSecret,
		"--oauth-" + name + "-auth-url", p.URL + "/authorize", "--oauth-" + name + "-token-url", p.URL + "/token",
		"--oauth-" + name + "-userinfo-url", p.URL + "/userinfo"}
}

const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

func TestOAuthAndLaunch(t *testing.T) {
	t.Parallel()
	p := identitytest.NewProvider(t, map[string]any{"sub": "w-77", "preferred_username": "webby", "email": "webby@example.com", "email_verified": true})
	s := start(t, append(providerFlags(p, "webid"), "--allowed-redirect-domains", "localhost,app.test")...)
	challenge := pkce(verifier)
	if challenge != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" { // RFC 7636 Appendix B
		t.Fatalf("PKCE transform: %s", challenge)
	}
	// Plain redirect flow.
	b := identitytest.Browser()
	toProvider, _ := identitytest.Follow(t, b, s.url+"/api/v1/auth/webid?code_challenge="+challenge+"&redirect_uri="+url.QueryEscape("https://app.test/done"))
	toCallback, _ := identitytest.Follow(t, b, toProvider.String())
	done, _ := identitytest.Follow(t, b, toCallback.String())
	if done.Host != "app.test" || done.Query().Get("code") == "" {
		t.Fatalf("completion %s", done)
	}
	res := s.must(s.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"code": done.Query().Get("code"), "code_verifier": verifier}, ""), 200).data()
	me := s.must(s.call("GET", "/api/v1/users/auth/me", nil, res["token"].(string)), 200).data()
	if me["email"] != "webby@example.com" || me["username"] != "webby" {
		t.Fatalf("me %v", me)
	}
	s.must(s.call("GET", "/api/v1/auth/webid?code_challenge="+challenge+"&redirect_uri="+url.QueryEscape("https://evil.test/"), nil, ""), 400)
	s.must(s.call("GET", "/api/v1/auth/codehost?code_challenge="+challenge, nil, ""), 503)

	// Popup launch.
	ticket := func(stateID string) string {
		return s.must(s.call("POST", "/api/v1/auth/launch/initiate", map[string]any{"provider": "webid", "code_challenge": challenge,
			"state_id": stateID}, "", "Origin", "http://localhost:5173"), 200).str("data", "launch_url")
	}
	launch := ticket("0b7e8f3a-1c2d-4e5f-9a8b-7c6d5e4f3a2b")
	b = identitytest.Browser()
	toProvider, r := identitytest.Follow(t, b, launch)
	if r.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("headers %v", r.Header)
	}
	toCallback, _ = identitytest.Follow(t, b, toProvider.String())
	done, _ = identitytest.Follow(t, b, toCallback.String())
	if done.String()[:len("http://localhost:5173/auth/complete?")] != "http://localhost:5173/auth/complete?" || done.Query().Get("state_id") != "0b7e8f3a-1c2d-4e5f-9a8b-7c6d5e4f3a2b" {
		t.Fatalf("completion %s", done)
	}
	s.must(s.call("POST", "/api/v1/auth/intent/exchange", map[string]any{"code": done.Query().Get("code"), "code_verifier": verifier}, ""), 200)
	if r := s.call("GET", launch, nil, ""); r.status != 410 || r.str("error") != "Gone" {
		t.Fatalf("reused ticket: %d %s", r.status, r.raw)
	}

	// 100 concurrent consumers of one ticket: exactly one 302.
	launch = ticket("1c8f9a3b-2d3e-4f60-8b9c-8d7e6f5a4b3c")
	const n = 100
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := map[int]int{}
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			res, err := c.Get(launch)
			st := -1
			if err == nil {
				res.Body.Close()
				st = res.StatusCode
			}
			mu.Lock()
			count[st]++
			mu.Unlock()
		}()
	}
	close(gate)
	wg.Wait()
	if count[302] != 1 || count[410] != n-1 {
		t.Fatalf("status counts %v", count)
	}
	if !strings.HasPrefix(p.URL, "http://127.0.0.1") {
		t.Fatal("provider not on loopback")
	}
}
