package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"deckhand/agent"
)

// send makes a request with a body and decodes a JSON object answer.
func send(t testing.TB, method, url, body string) (int, map[string]any, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, raw
}

// openapiInfo is the info block of a service's document.
func openapiInfo(t testing.TB, base string) map[string]any {
	t.Helper()
	status, m, raw := get(t, base+"/openapi.json")
	if status != 200 {
		t.Fatalf("openapi.json: %d %s", status, raw)
	}
	info, _ := m["info"].(map[string]any)
	if info["title"] == "" || info["title"] == nil {
		t.Fatalf("untitled document: %v", info)
	}
	return info
}

// TestIsolationKeepsDataAndSettings runs cron and files in-process, writes
// a file and a crontab entry, stops the agent and starts it again on the same data
// with both isolated: the children read back what the in-process services
// wrote, get the same settings (--files-root and --allowed-origins from
// flags, --crontab and --cron-runner from DECKHAND_* variables), apply the
// same request policy and title their documents alike.
// Then back in-process, the children's writes are there too.
func TestIsolationKeepsDataAndSettings(t *testing.T) {
	t.Parallel()
	base := freeBase(t)
	data, root := t.TempDir(), t.TempDir()
	crontab := filepath.Join(t.TempDir(), "spool", "crontab")
	gw := "127.0.0.1:" + strconv.Itoa(base)
	env := []string{"DECKHAND_CRONTAB=" + crontab, "DECKHAND_CRON_RUNNER=false"}
	const allowed = "https://app.example.com"
	run := func(isolate string) *agentProc {
		a := startRaw(t, env, gw, base, data, "run", "--data", data, "--listen", gw, "--port-base", strconv.Itoa(base),
			"--services", "cron,files", "--isolate", isolate, "--files-root", root, "--log-level", "warn",
			"--allowed-origins", allowed)
		st := a.ready(t)
		want := agent.ModeInProcess
		if isolate != "none" {
			want = agent.ModeChild
		}
		for _, s := range st.Services {
			if s.Mode != want {
				t.Fatalf("--isolate %s: %s runs %s", isolate, s.Name, s.Mode)
			}
			if want == agent.ModeChild && (s.PID == st.Agent.PID || strings.Contains(s.Command, root) ||
				strings.Contains(s.Command, crontab) || strings.Contains(s.Command, allowed)) {
				t.Fatalf("child %+v: settings belong in its environment, not its argv", s)
			}
		}
		return a
	}
	stop := func(a *agentProc) {
		a.stop(t)
		if a.err != nil {
			t.Fatalf("agent exit: %v\n%s", a.err, a.out)
		}
	}
	gwURL := "http://" + gw + "/_/"

	a := run("none")
	if status, _, raw := send(t, "PUT", gwURL+"files/api/v1/files/content?path=/in/one.txt", "written in-process"); status != 201 {
		t.Fatalf("put: %d %s", status, raw)
	}
	status, created, raw := send(t, "POST", gwURL+"cron/api/v1/cron/entries", `{"comment":"nightly","schedule":"0 3 * * *","command":"echo in-process"}`)
	if status != 201 {
		t.Fatalf("create entry: %d %s", status, raw)
	}
	entryID, _ := created["id"].(string)
	infos := map[string]map[string]any{"cron": openapiInfo(t, gwURL+"cron"), "files": openapiInfo(t, gwURL+"files")}
	stop(a)

	a = run("cron,files")
	if status, _, raw := get(t, gwURL+"files/api/v1/files/content?path=/in/one.txt"); status != 200 || string(raw) != "written in-process" {
		t.Fatalf("isolated files read: %d %q", status, raw)
	}
	status, entry, raw := get(t, gwURL+"cron/api/v1/cron/entries/"+entryID)
	if status != 200 || entry["comment"] != "nightly" {
		t.Fatalf("isolated cron read: %d %s", status, raw)
	}
	if status, _, raw := send(t, "PUT", gwURL+"files/api/v1/files/content?path=/iso/two.txt", "written isolated"); status != 201 {
		t.Fatalf("isolated put: %d %s", status, raw)
	}
	if b, err := os.ReadFile(filepath.Join(root, "iso", "two.txt")); err != nil || string(b) != "written isolated" {
		t.Fatalf("--files-root did not reach the child: %q %v", b, err)
	}
	if status, _, raw := send(t, "POST", gwURL+"cron/api/v1/cron/entries", `{"schedule":"@daily","command":"echo isolated"}`); status != 201 {
		t.Fatalf("isolated create entry: %d %s", status, raw)
	}
	tab, err := os.ReadFile(crontab)
	if err != nil || !strings.Contains(string(tab), "0 3 * * * echo in-process") || !strings.Contains(string(tab), "@daily echo isolated") {
		t.Fatalf("DECKHAND_CRONTAB did not reach the child: %v\n%s", err, tab)
	}
	for name, want := range infos {
		if got := openapiInfo(t, gwURL+name); got["title"] != want["title"] || got["description"] != want["description"] {
			t.Fatalf("%s document titled %v isolated, %v in-process", name, got, want)
		}
	}
	// The child's own port applies the policy the agent was given.
	checkPolicy(t, "http://127.0.0.1:"+strconv.Itoa(agent.Port(base, "files"))+"/api/v1/files?path=/", allowed)
	// A bad query parameter is named the same by a child.
	if status, m, raw := get(t, gwURL+"cron/api/v1/cron/runs?limit=0"); status != 400 || m["details"] != "limit" {
		t.Fatalf("isolated bad limit: %d %s", status, raw)
	}
	stop(a)

	a = run("none")
	if status, _, raw := get(t, gwURL+"files/api/v1/files/content?path=/iso/two.txt"); status != 200 || string(raw) != "written isolated" {
		t.Fatalf("in-process read of the child's write: %d %q", status, raw)
	}
	status, list, raw := get(t, gwURL+"cron/api/v1/cron/entries")
	if es, _ := list["entries"].([]any); status != 200 || len(es) != 2 {
		t.Fatalf("in-process list after isolation: %d %s", status, raw)
	}
	stop(a)
	for _, f := range []string{"cron/store.db", "files/store.db"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if bytes.Contains([]byte(a.out.String()), []byte("panic")) {
		t.Fatalf("output:\n%s", a.out)
	}
}

// checkPolicy sends url with an allowed Origin (200), a foreign one (403)
// and a foreign Host (421).
func checkPolicy(t *testing.T, url, allowed string) {
	t.Helper()
	for _, tc := range []struct {
		origin, host string
		want         int
	}{
		{allowed, "", 200},
		{"https://evil.example", "", 403},
		{"", "rebind.evil.example", 421},
	} {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s origin %q host %q: %d %s, want %d", url, tc.origin, tc.host, resp.StatusCode, raw, tc.want)
		}
	}
}

// TestBadSettingsFailBeforeAnythingStarts: a --files-root that is not a
// directory or an --allowed-origins entry that is not an origin stops
// `deckhand run` and `deckhand service NAME` naming the flag.
func TestBadSettingsFailBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	base := strconv.Itoa(freeBase(t))
	out, err := deckhand(t, nil, "run", "--data", t.TempDir(), "--listen", "127.0.0.1:"+base, "--port-base", base, "--files-root", file)
	if err == nil || !strings.Contains(out, "--files-root "+file+": not a directory") {
		t.Fatalf("run: %v %s", err, out)
	}
	out, err = deckhand(t, []string{"DECKHAND_FILES_ROOT=" + file}, "service", "files", "--data", t.TempDir(), "--listen", "127.0.0.1:0")
	if err == nil || !strings.Contains(out, "--files-root") {
		t.Fatalf("service: %v %s", err, out)
	}
	// "*" is not an origin: there is no "any origin" switch.
	for _, origins := range []string{"*", "app.example.com", "https://app.example.com/path"} {
		out, err = deckhand(t, nil, "run", "--data", t.TempDir(), "--listen", "127.0.0.1:"+base, "--port-base", base, "--allowed-origins", origins)
		if err == nil || !strings.Contains(out, "--allowed-origins") {
			t.Fatalf("run --allowed-origins %s: %v %s", origins, err, out)
		}
		out, err = deckhand(t, []string{"DECKHAND_ALLOWED_ORIGINS=" + origins}, "service", "cron", "--data", t.TempDir(), "--listen", "127.0.0.1:0")
		if err == nil || !strings.Contains(out, "--allowed-origins") {
			t.Fatalf("service DECKHAND_ALLOWED_ORIGINS=%s: %v %s", origins, err, out)
		}
	}
}
