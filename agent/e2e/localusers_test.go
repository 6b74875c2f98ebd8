package e2e_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"deckhand/agent"
	"deckhand/platform/platformtest"
)

// TestLocalUsersAreNotRoot: a local user the agent does not trust (uid
// 65534, not root, not the agent's own, not in --trusted-uids) is no
// loopback client: through the gateway it needs a credential exactly as
// an outside client does, and the services' own ports refuse it (401) on
// the files content and the terminal. --trusted-uids lets it in.
func TestLocalUsersAreNotRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("top secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	perm := filepath.Join(t.TempDir(), "perm.json")
	if err := os.WriteFile(perm, []byte(`{"project":"p1","container":"c1","default":"deny",
		"groups":{"ops":{"type":"token","header":"X-Key","value":"k"}},"permissions":{"ops":{"files":true}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	nobody := platformtest.Nobody
	content := "/api/v1/files/content?path=/secret.txt"
	create := "/api/v1/terminal/create"

	// No document: only trusted loopback clients pass the gateway.
	a := start(t, "--services", "files,terminal", "--files-root", root)
	a.ready(t)
	gw := "http://" + a.gw
	files := "http://127.0.0.1:" + strconv.Itoa(agent.Port(a.base, "files"))
	term := "http://127.0.0.1:" + strconv.Itoa(agent.Port(a.base, "terminal"))
	for _, c := range []struct {
		name, method, url string
		want              int
		code              string
	}{
		{"gateway files", "GET", gw + "/_/files" + content, 403, "FORBIDDEN"},
		{"gateway terminal", "POST", gw + "/_/terminal" + create, 403, "FORBIDDEN"},
		{"gateway status", "GET", gw + "/_agent/status", 403, "FORBIDDEN"},
		{"files port", "GET", files + content, 401, "UNAUTHORIZED"},
		{"terminal port", "POST", term + create, 401, "UNAUTHORIZED"},
		{"terminal port sessions", "GET", term + "/api/v1/terminal/sessions", 401, "UNAUTHORIZED"},
	} {
		status, body := platformtest.AsUser(t, nobody, c.method, c.url, "{}", "Content-Type: application/json")
		if status != c.want || !strings.Contains(body, `"code":"`+c.code+`"`) || strings.Contains(body, "top secret") {
			t.Errorf("uid %d, %s: %d %s, want %d %s", nobody, c.name, status, body, c.want, c.code)
		}
	}
	// The agent's own user (root here) is served, directly and through the gateway.
	for _, u := range []string{gw + "/_/files" + content, files + content} {
		if status, _, raw := get(t, u); status != 200 || string(raw) != "top secret" {
			t.Fatalf("root, %s: %d %s", u, status, raw)
		}
	}

	// With a document the untrusted user is judged by it, as an outside
	// client: 401 without a credential, its credential admits it.
	b := start(t, "--services", "files,terminal", "--files-root", root, "--permissions-file", perm)
	b.ready(t)
	gw = "http://" + b.gw
	if status, body := platformtest.AsUser(t, nobody, "GET", gw+"/_/files"+content, ""); status != 401 {
		t.Errorf("uid %d, document, no credential: %d %s", nobody, status, body)
	}
	if status, body := platformtest.AsUser(t, nobody, "POST", gw+"/_/terminal"+create, "{}", "Content-Type: application/json"); status != 401 {
		t.Errorf("uid %d, document, terminal: %d %s", nobody, status, body)
	}
	if status, body := platformtest.AsUser(t, nobody, "GET", gw+"/_/files"+content, "", "X-Key: k"); status != 200 || body != "top secret" {
		t.Errorf("uid %d, document, credential: %d %s", nobody, status, body)
	}

	// --trusted-uids makes it one of the agent's own.
	c := start(t, "--services", "files", "--files-root", root, "--trusted-uids", strconv.Itoa(nobody))
	c.ready(t)
	files = "http://127.0.0.1:" + strconv.Itoa(agent.Port(c.base, "files"))
	for _, u := range []string{"http://" + c.gw + "/_/files" + content, files + content} {
		if status, body := platformtest.AsUser(t, nobody, "GET", u, ""); status != 200 || body != "top secret" {
			t.Errorf("uid %d in --trusted-uids, %s: %d %s", nobody, u, status, body)
		}
	}
}
