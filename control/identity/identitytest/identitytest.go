// Package identitytest holds what the identity package's tests and the
// identitye2e and replicae2e end-to-end tests need: a JSON call against the
// API, a browser-like client, a redirect follower for the OAuth flows and
// the token of a mail a server wrote.
package identitytest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Resp is one received response; Body is the decoded JSON object, if the
// response is one.
type Resp struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Call sends body (JSON-encoded unless []byte or string) to base+path, or to
// path when it is a full URL, with an optional bearer credential and header
// name/value pairs.
func Call(t testing.TB, c *http.Client, base, method, path string, body any, bearer string, hdrs ...string) Resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	u := path
	if !strings.HasPrefix(path, "http") {
		u = base + path
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(hdrs); i += 2 {
		req.Header.Set(hdrs[i], hdrs[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := Resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		_ = json.Unmarshal(raw, &r.Body)
	}
	return r
}

// Browser is a client with a cookie jar that does not follow redirects.
func Browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Follow GETs u (with header name/value pairs) and returns the Location of
// its 302; any other status fails the test.
func Follow(t testing.TB, c *http.Client, u string, hdrs ...string) (*url.URL, *http.Response) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdrs); i += 2 {
		req.Header.Set(hdrs[i], hdrs[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("GET %s: %d, want 302", u, res.StatusCode)
	}
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc, res
}

var mailTokenRe = regexp.MustCompile(`token=([A-Za-z0-9_\-]+)`)

// MailToken is the token= of the newest .eml file in dir addressed to addr
// (the mail directory of a running deckhand-control).
func MailToken(t testing.TB, dir, addr string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("mail dir: %v", err)
	}
	// ReadDir sorts by name, and the names sort by time: the newest last.
	for _, e := range slices.Backward(entries) {
		if !strings.HasSuffix(e.Name(), ".eml") {
			continue
		}
		raw, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(string(raw), "\r\nTo: "+addr+"\r\n") {
			if m := mailTokenRe.FindStringSubmatch(string(raw)); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no mail with a token to %s in %s", addr, dir)
	return ""
}
