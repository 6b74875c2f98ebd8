package identitye2e_test

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

	"deckhand/control/identity/identitytest"
)

// provider is a stand-in for an outside OAuth provider: authorize, token
// (checking the server's PKCE verifier) and userinfo.
type provider struct {
	srv   *httptest.Server
	mu    sync.Mutex
	codes map[string][2]string // code → challenge, redirect_uri
}

func newProvider(t *testing.T) *provider {
	p := &provider{codes: map[string][2]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "cid" || q.Get("code_challenge_method") != "S256" || q.Get("state") == "" {
			http.Error(w, "bad request", 400)
			return
		}
		code := "c" + q.Get("state")[:10]
		p.mu.Lock()
		p.codes[code] = [2]string{q.Get("code_challenge"), q.Get("redirect_uri")}
		p.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.mu.Lock()
		g, ok := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code"))
		p.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		w.Header().Set("Content-Type", "application/json")
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g[0] || r.PostForm.Get("redirect_uri") != g[1] {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "bearer"})
	})
	mux.HandleFunc("/userinfo", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer at" {
			http.Error(w, "no", 401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sub":"w-77","preferred_username":"webby","email":"webby@example.com","email_verified":true}`))
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) flags(name string) []string {
	return []string{"--oauth-" + name + "-client-id", "cid", "--oauth-" + name + "-client-secret", "csecret",
		"--oauth-" + name + "-auth-url", p.srv.URL + "/authorize", "--oauth-" + name + "-token-url", p.srv.URL + "/token",
		"--oauth-" + name + "-userinfo-url", p.srv.URL + "/userinfo"}
}

const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

func TestOAuthAndLaunch(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	s := start(t, append(p.flags("webid"), "--allowed-redirect-domains", "localhost,app.test")...)
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
	ticket := func() string {
		return s.must(s.call("POST", "/api/v1/auth/launch/initiate", map[string]any{"provider": "webid", "code_challenge": challenge,
			"state_id": "0b7e8f3a-1c2d-4e5f-9a8b-7c6d5e4f3a2b"}, "", "Origin", "http://localhost:5173"), 200).str("data", "launch_url")
	}
	launch := ticket()
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
	launch = ticket()
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
	if !strings.HasPrefix(p.srv.URL, "http://127.0.0.1") {
		t.Fatal("provider not on loopback")
	}
}
