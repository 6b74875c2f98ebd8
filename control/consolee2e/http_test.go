package consolee2e_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"deckhand/control/console"
	"deckhand/control/controltest"
)

// hit sends one request with the given headers and cookies.
func hit(t *testing.T, s *controltest.Server, method, path, body string, hdr map[string]string, cookies ...*http.Cookie) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

func envelope(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON envelope: %s", raw)
	}
	return m
}

// TestPagesAndAPIShareTheHost: the console's pages and files come with the
// strict CSP, every other path keeps the API's 404 envelope, and the
// mail links' paths are console pages.
func TestPagesAndAPIShareTheHost(t *testing.T) {
	s := controltest.Start(t)
	index := ""
	for _, p := range []string{"/", "/login", "/auth/verify-email?token=abc", "/auth/reset-password?token=abc", "/projects/abc123", "/containers/xyz"} {
		resp, raw := hit(t, s, "GET", p, "", nil)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for h, want := range map[string]string{"Content-Security-Policy": console.CSP, "X-Frame-Options": "DENY",
			"Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
			if got := resp.Header.Get(h); got != want {
				t.Fatalf("GET %s: %s %q, want %q", p, h, got, want)
			}
		}
		if !strings.Contains(console.CSP, "frame-ancestors 'none'") || strings.Contains(console.CSP, "unsafe-inline") {
			t.Fatalf("CSP is not strict: %s", console.CSP)
		}
		index = string(raw)
	}
	if !console.Built() {
		t.Log("console not built (make build): the placeholder page is served")
	} else if strings.Contains(index, "<script>") || strings.Contains(index, "style=") {
		t.Fatalf("index.html has inline script or style:\n%s", index)
	}
	// Everything else is the API's, with its 404 envelope.
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/nope"}, {"GET", "/nope"}, {"POST", "/"}, {"GET", "/projects/a/b"}, {"DELETE", "/login"},
		{"GET", "/api/v1/console"}, {"GET", "/assets/none.js"},
	} {
		resp, raw := hit(t, s, c.method, c.path, "", nil)
		m := envelope(t, raw)
		// Not the console's page policy, but like every answer never
		// framed.
		if resp.StatusCode != 404 || m["message"] != "no such route" || resp.Header.Get("Content-Security-Policy") != "frame-ancestors 'none'" ||
			resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("%s %s: %d %s %v", c.method, c.path, resp.StatusCode, raw, resp.Header)
		}
	}
	// Built files: hashed names cached for good, gzip when asked.
	if !console.Built() {
		return
	}
	m := regexp.MustCompile(`/assets/[^"]+\.js`).FindString(index)
	if m == "" {
		t.Fatalf("index names no script: %s", index)
	}
	resp, raw := hit(t, s, "GET", m, "", map[string]string{"Accept-Encoding": "gzip"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Fatalf("GET %s: %d %v", m, resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(zr)
	if len(js) < 1000 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("script: %d bytes, %s", len(js), resp.Header.Get("Content-Type"))
	}
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// cleared reports whether resp drops both session cookies, each on its
// own path with the session's flags.
func cleared(resp *http.Response) bool {
	for name, path := range map[string]string{console.SessionCookie: "/", console.RefreshCookie: console.SessionPath} {
		c := cookieNamed(resp, name)
		if c == nil || c.MaxAge >= 0 || c.Value != "" || c.Path != path || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
			return false
		}
	}
	return true
}

// TestCookieSession: the console's login sets HttpOnly SameSite=Strict
// cookies and answers a CSRF token, never the tokens; the cookie counts
// only from this origin, and state-changing calls need the token.
func TestCookieSession(t *testing.T) {
	s := controltest.Start(t)
	login := `{"email":"` + controltest.AdminEmail + `","password":"` + controltest.AdminPass + `"}`

	resp, raw := hit(t, s, "POST", console.SessionPath, login, map[string]string{"Origin": "http://evil.example"})
	if resp.StatusCode != 403 || cookieNamed(resp, console.SessionCookie) != nil {
		t.Fatalf("login from another origin: %d %s", resp.StatusCode, raw)
	}
	// Another origin is refused before its body is read.
	if resp, raw := hit(t, s, "POST", console.SessionPath, `{"nope":1}`, map[string]string{"Sec-Fetch-Site": "cross-site"}); resp.StatusCode != 403 {
		t.Fatalf("bad login from another site: %d %s", resp.StatusCode, raw)
	}
	if resp, raw := hit(t, s, "POST", console.SessionPath, `{"email":"a@b.example","password":"Passw0rdPassw0rd","response_mode":"intent","code_challenge":"`+
		strings.Repeat("a", 43)+`"}`, nil); resp.StatusCode != 400 || !strings.Contains(string(raw), "response_mode") {
		t.Fatalf("intent mode: %d %s", resp.StatusCode, raw)
	}
	resp, raw = hit(t, s, "POST", console.SessionPath, login, map[string]string{"Origin": s.URL, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != 200 || envelope(t, raw)["message"] != "Login successful" {
		t.Fatalf("login: %d %s", resp.StatusCode, raw)
	}
	sess, ref := cookieNamed(resp, console.SessionCookie), cookieNamed(resp, console.RefreshCookie)
	for _, c := range []*http.Cookie{sess, ref} {
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
			t.Fatalf("cookie flags: %+v", c)
		}
	}
	if sess.Path != "/" || ref.Path != console.SessionPath {
		t.Fatalf("cookie paths: %s %s", sess.Path, ref.Path)
	}
	data := envelope(t, raw)["data"].(map[string]any)
	csrf, _ := data["csrf_token"].(string)
	if csrf == "" || strings.Contains(string(raw), sess.Value) || strings.Contains(string(raw), ref.Value) || data["token"] != nil {
		t.Fatalf("login answer: %s", raw)
	}

	create := `{"alias":"from cookie"}`
	cases := []struct {
		name   string
		method string
		path   string
		body   string
		hdr    map[string]string
		status int
	}{
		{"read with the cookie", "GET", "/api/v1/users/auth/me", "", nil, 200},
		{"session read answers the token", "GET", console.SessionPath, "", nil, 200},
		{"write without CSRF token", "POST", "/api/v1/auth/tokens", create, nil, 403},
		{"write with a wrong CSRF token", "POST", "/api/v1/auth/tokens", create, map[string]string{console.CSRFHeader: csrf + "x"}, 403},
		{"write from another origin", "POST", "/api/v1/auth/tokens", create, map[string]string{console.CSRFHeader: csrf, "Origin": "http://127.0.0.1:1"}, 403},
		{"read from another site", "GET", "/api/v1/users/auth/me", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"read from a same-site page", "GET", "/api/v1/users/auth/me", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"write with the CSRF token", "POST", "/api/v1/auth/tokens", create, map[string]string{console.CSRFHeader: csrf, "Origin": s.URL, "Sec-Fetch-Site": "same-origin"}, 201},
	}
	for _, c := range cases {
		resp, raw := hit(t, s, c.method, c.path, c.body, c.hdr, sess)
		if resp.StatusCode != c.status {
			t.Fatalf("%s: %d, want %d: %s", c.name, resp.StatusCode, c.status, raw)
		}
		if c.name == "session read answers the token" && envelope(t, raw)["data"].(map[string]any)["csrf_token"] != csrf {
			t.Fatalf("session read: %s", raw)
		}
	}
	// Only the one write went through.
	admin := s.Admin()
	toks := s.MustDo(200, "GET", "/api/v1/auth/tokens", nil, admin)
	if list, _ := toks.Body["data"].([]any); len(list) != 1 {
		t.Fatalf("tokens after the cookie writes: %s", toks.Raw)
	}

	// Refresh rotates both cookies; the CSRF token follows the new session.
	resp, raw = hit(t, s, "POST", console.SessionPath+"/refresh", "", nil, ref)
	if resp.StatusCode != 200 || cookieNamed(resp, console.SessionCookie) == nil {
		t.Fatalf("refresh: %d %s", resp.StatusCode, raw)
	}
	sess2 := cookieNamed(resp, console.SessionCookie)
	csrf2 := envelope(t, raw)["data"].(map[string]any)["csrf_token"].(string)
	if csrf2 == csrf || sess2.Value == sess.Value {
		t.Fatal("refresh kept the session token")
	}

	// A refresh token that is not one is refused, and the refusal clears
	// both cookies; from another origin a refresh is refused before
	// anything else.
	if resp, raw := hit(t, s, "POST", console.SessionPath+"/refresh", "", map[string]string{"Origin": "http://evil.example"}, ref); resp.StatusCode != 403 || len(resp.Cookies()) != 0 {
		t.Fatalf("refresh from another origin: %d %v %s", resp.StatusCode, resp.Cookies(), raw)
	}
	resp, raw = hit(t, s, "POST", console.SessionPath+"/refresh", "", nil, &http.Cookie{Name: console.RefreshCookie, Value: "not-a-token"})
	if resp.StatusCode != 401 || !cleared(resp) {
		t.Fatalf("refused refresh: %d %v %s", resp.StatusCode, resp.Cookies(), raw)
	}
	if resp, raw := hit(t, s, "POST", console.SessionPath+"/refresh", "", nil); resp.StatusCode != 401 {
		t.Fatalf("refresh without the cookie: %d %s", resp.StatusCode, raw)
	}

	// Logout needs the token, ends the session and clears the cookies.
	if resp, raw := hit(t, s, "DELETE", console.SessionPath, "", nil, sess2); resp.StatusCode != 403 {
		t.Fatalf("logout without CSRF: %d %s", resp.StatusCode, raw)
	}
	if resp, raw := hit(t, s, "DELETE", console.SessionPath, "", map[string]string{console.CSRFHeader: csrf2, "Sec-Fetch-Site": "cross-site"}, sess2); resp.StatusCode != 403 {
		t.Fatalf("logout from another site: %d %s", resp.StatusCode, raw)
	}
	resp, raw = hit(t, s, "DELETE", console.SessionPath, "", map[string]string{console.CSRFHeader: csrf2}, sess2)
	if resp.StatusCode != 200 || !cleared(resp) || envelope(t, raw)["message"] != "Logged out" {
		t.Fatalf("logout: %d %v %s", resp.StatusCode, resp.Cookies(), raw)
	}
	if resp, raw := hit(t, s, "GET", "/api/v1/users/auth/me", "", nil, sess2); resp.StatusCode != 401 {
		t.Fatalf("the logged-out cookie still works: %d %s", resp.StatusCode, raw)
	}
	// Bearer clients are untouched by the cookie rules.
	if r := s.Call("GET", "/api/v1/users/auth/me", nil, admin, "Origin", "http://evil.example"); r.Status != 200 {
		t.Fatalf("bearer from any origin: %d %s", r.Status, r.Raw)
	}
}

// TestPlantedSessionCookie: cookies do not keep to a port, so a page on
// another port of the host can plant its own deckhand_session (and
// deckhand_refresh) next to the user's, sent first. With two session
// cookies the request is not signed in by either: reads and writes are
// 401, nothing is written in either account, a refresh does not rotate
// into the planted session and a logout ends neither; one cookie alone
// still works.
func TestPlantedSessionCookie(t *testing.T) {
	s := controltest.Start(t)
	admin := s.Admin()
	s.User(admin, "planter@example.com")
	login := func(email, pw string) (sess, ref *http.Cookie, csrf string) {
		t.Helper()
		resp, raw := hit(t, s, "POST", console.SessionPath, `{"email":"`+email+`","password":"`+pw+`"}`, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("login %s: %d %s", email, resp.StatusCode, raw)
		}
		return cookieNamed(resp, console.SessionCookie), cookieNamed(resp, console.RefreshCookie),
			envelope(t, raw)["data"].(map[string]any)["csrf_token"].(string)
	}
	userSess, userRef, userCSRF := login(controltest.AdminEmail, controltest.AdminPass)
	plantSess, plantRef, plantCSRF := login("planter@example.com", controltest.GoodPW)

	for _, tc := range []struct {
		name    string
		cookies []*http.Cookie
	}{
		{"planted first", []*http.Cookie{plantSess, userSess}},
		{"planted last", []*http.Cookie{userSess, plantSess}},
	} {
		resp, raw := hit(t, s, "GET", "/api/v1/users/auth/me", "", nil, tc.cookies...)
		if resp.StatusCode != 401 || !strings.Contains(string(raw), "more than one "+console.SessionCookie) {
			t.Fatalf("%s, read: %d %s", tc.name, resp.StatusCode, raw)
		}
		if resp, raw := hit(t, s, "GET", console.SessionPath, "", nil, tc.cookies...); resp.StatusCode != 401 || strings.Contains(string(raw), "csrf_token") {
			t.Fatalf("%s, session read: %d %s", tc.name, resp.StatusCode, raw)
		}
		for _, csrf := range []string{plantCSRF, userCSRF} {
			if resp, raw := hit(t, s, "POST", "/api/v1/auth/tokens", `{"alias":"planted"}`, map[string]string{console.CSRFHeader: csrf}, tc.cookies...); resp.StatusCode != 401 {
				t.Fatalf("%s, write: %d %s", tc.name, resp.StatusCode, raw)
			}
		}
		// Logout ends neither session.
		if resp, raw := hit(t, s, "DELETE", console.SessionPath, "", map[string]string{console.CSRFHeader: plantCSRF}, tc.cookies...); resp.StatusCode != 400 ||
			!strings.Contains(string(raw), console.SessionCookie) {
			t.Fatalf("%s, logout: %d %s", tc.name, resp.StatusCode, raw)
		}
	}
	// A refresh with two refresh cookies rotates into neither session.
	resp, raw := hit(t, s, "POST", console.SessionPath+"/refresh", "", nil, plantRef, userRef)
	if resp.StatusCode != 400 || !strings.Contains(string(raw), console.RefreshCookie) || len(resp.Cookies()) != 0 {
		t.Fatalf("refresh with two refresh cookies: %d %v %s", resp.StatusCode, resp.Cookies(), raw)
	}

	// Nothing was written in either account, and each cookie alone still works.
	for _, c := range []struct {
		sess *http.Cookie
		who  string
	}{{userSess, controltest.AdminEmail}, {plantSess, "planter@example.com"}} {
		resp, raw := hit(t, s, "GET", "/api/v1/users/auth/me", "", nil, c.sess)
		if resp.StatusCode != 200 || !strings.Contains(string(raw), c.who) {
			t.Fatalf("one cookie of %s: %d %s", c.who, resp.StatusCode, raw)
		}
		if resp, raw := hit(t, s, "GET", "/api/v1/auth/tokens", "", nil, c.sess); resp.StatusCode != 200 || strings.Contains(string(raw), "planted") {
			t.Fatalf("tokens of %s: %d %s", c.who, resp.StatusCode, raw)
		}
	}
}
