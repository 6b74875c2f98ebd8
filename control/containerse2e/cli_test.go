package containerse2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/control/controltest"
)

// deckhand runs the CLI as alice (her own config) and answers stdout.
func (f *fixture) deckhand(home, stdin string, args ...string) string {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DECKHAND_CONFIG=" + filepath.Join(home, "cfg", "config.json")}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		f.t.Fatalf("deckhand %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return out.String()
}

func (f *fixture) deckhandJSON(home string, args ...string) map[string]any {
	f.t.Helper()
	out := f.deckhand(home, "", append(args, "-o", "json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		f.t.Fatalf("deckhand %v -o json: %v\n%s", args, err, out)
	}
	return m
}

// TestCLI: `deckhand containers` creates (waiting for running), lists,
// shows, stops, starts, restarts and removes a container.
func TestCLI(t *testing.T) {
	f := newFixture(t)
	home := t.TempDir()
	f.deckhand(home, controltest.GoodPW+"\n", "login", f.s.URL, "--email", "alice@example.com", "--password-stdin")
	c := f.deckhandJSON(home, "containers", "create", "box", "--project", f.project, "--image", f.image, "--memory-mb", "256", "--wait", "60s")
	id, _ := c["id"].(string)
	if c["status"] != "running" || id == "" || c["agent_addr"] == "" {
		t.Fatalf("create --wait: %v", c)
	}
	if f.inst == "" {
		f.inst = installationOf(t, f.host, id)
	}
	// The agent commands find the container's agent through the control
	// plane, and open it with an access token the control plane signs
	// for alice: no proxy permissions document is needed.
	if out := f.deckhand(home, "", "exec", "--container", id, "--", "sh", "-c", "echo from-cli > /home/user/cli; id -u"); out != "0\n" {
		t.Fatalf("exec --container: %q", out)
	}
	if out := f.deckhand(home, "", "ls", "--container", id, ":/home/user"); !strings.Contains(out, "cli") {
		t.Fatalf("ls --container:\n%s", out)
	}
	f.accessTokens(home, id, c["agent_addr"].(string))
	// A token the document's group takes still goes with --token.
	f.openAgent(id, c)
	if out := f.deckhand(home, "", "exec", "--container", id, "--token", cliKey, "--", "cat", "/home/user/cli"); out != "from-cli\n" {
		t.Fatalf("exec --container --token: %q", out)
	}
	list := f.deckhandJSON(home, "containers", "ls", "--project", f.project)
	if cs, _ := list["containers"].([]any); len(cs) != 1 || cs[0].(map[string]any)["id"] != id {
		t.Fatalf("ls: %v", list)
	}
	if out := f.deckhand(home, "", "containers", "get", id); !strings.Contains(out, "running") || !strings.Contains(out, "URL TERMINAL") {
		t.Fatalf("get (table):\n%s", out)
	}
	pv := f.deckhandJSON(home, "preview", "8080", "--container", id, "--ttl", "2h")
	if u, _ := pv["url"].(string); !strings.Contains(u, "-"+id+"-p8080-1.local.localhost") || !strings.Contains(u, "deckhand_preview=") || pv["port"] != float64(8080) {
		t.Fatalf("preview: %v", pv)
	}
	// The tunnel to a container names the platform proxy's preview of
	// the port too.
	tctx, stopTunnel := context.WithTimeout(context.Background(), time.Minute)
	tun := exec.CommandContext(tctx, agentBin, "tunnel", "--container", id, "--remote", "8080", "-o", "json")
	tun.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "DECKHAND_CONFIG=" + filepath.Join(home, "cfg", "config.json")}
	stdout, _ := tun.StdoutPipe()
	if err := tun.Start(); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.NewDecoder(stdout).Decode(&rec); err != nil {
		t.Fatalf("tunnel -o json: %v", err)
	}
	stopTunnel()
	_ = tun.Wait()
	if p, _ := rec["preview"].(string); !strings.Contains(p, "-"+id+"-p8080-1.local.localhost") {
		t.Fatalf("tunnel --container -o json: %v", rec)
	}
	for _, step := range []struct{ action, want string }{{"stop", "stopped"}, {"start", "running"}, {"restart", "running"}} {
		if c := f.deckhandJSON(home, "containers", step.action, id); c["status"] != step.want {
			t.Fatalf("%s: %v", step.action, c)
		}
	}
	if out := f.deckhandJSON(home, "containers", "rm", id); out["deleted"] != true {
		t.Fatalf("rm: %v", out)
	}
	if got := engineObjects(t, f.host, id); len(got) != 0 {
		t.Fatalf("after rm: %v", got)
	}
}

// accessTokens: `deckhand containers token` prints a token limited to
// the services it names, which the agent at addr admits for those alone;
// a viewer and a stranger get none, and bad input is refused naming the
// field.
func (f *fixture) accessTokens(home, id, addr string) {
	t := f.t
	t.Helper()
	tok := f.deckhandJSON(home, "containers", "token", id, "--for", "files", "--ttl", "5m")
	value, _ := tok["token"].(string)
	services, _ := tok["services"].([]any)
	if strings.Count(value, ".") != 2 || len(services) != 1 || services[0] != "files" || tok["agent_url"] != "http://"+addr {
		t.Fatalf("containers token: %v", tok)
	}
	call := func(method, path, body, bearer string) int {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	files, run := "/_/files/api/v1/files?path=/home/user", "/_/process/api/v1/process/run"
	if code := call("GET", files, "", value); code != 200 {
		t.Fatalf("a files token at files: %d", code)
	}
	if code := call("POST", run, `{"shell":"true"}`, value); code != 401 && code != 403 {
		t.Fatalf("a files token ran a process: %d", code)
	}
	if code := call("GET", files, "", ""); code != 401 && code != 403 {
		t.Fatalf("no token at files: %d", code)
	}
	if code := call("GET", files, "", value[:len(value)-3]+"xyz"); code != 401 && code != 403 {
		t.Fatalf("a mangled token at files: %d", code)
	}
	all := data(f.must(201, "POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{}, f.alice))
	if code := call("POST", run, `{"shell":"true"}`, all["token"].(string)); code != 200 {
		t.Fatalf("a token for every service at process: %d", code)
	}
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"services": []string{"files", "nope"}}, "services[1]"},
		{map[string]any{"ttl_seconds": 10}, "ttl_seconds"},
		{map[string]any{"ttl_seconds": 86401}, "ttl_seconds"},
	} {
		r := f.must(400, "POST", "/api/v1/containers/"+id+"/access-tokens", bad.body, f.alice)
		if !strings.Contains(string(r.Raw), bad.field) {
			t.Fatalf("%v: %s", bad.body, r.Raw)
		}
	}
	// A viewer of the project may read the container, not open it; a
	// stranger learns nothing of it.
	viewerID, viewer := f.s.User(f.admin, "vera@example.com")
	f.must(201, "POST", "/api/v1/projects/"+f.project+"/permissions", map[string]any{"user_id": viewerID, "role": "viewer"}, f.alice)
	f.must(403, "POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{}, viewer)
	_, stranger := f.s.User(f.admin, "sam@example.com")
	if r := f.s.Call("POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{}, stranger); r.Status != 403 {
		t.Fatalf("a stranger minted an access token: %d %s", r.Status, r.Raw)
	}
}
