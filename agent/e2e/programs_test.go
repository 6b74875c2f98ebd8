package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"deckhand/agent"
)

// commandServices run commands: proxy permissions judge them as exec (the
// terminal as terminal), never as services.
var commandServices = []string{"cron", "terminal", "daemon", "exec", "run"}

// TestServicesGrantReachesNoCommand: a credential whose group has only the
// services program is refused (403) on every route of every service that
// runs a command, the routes read from each service's own OpenAPI
// document; the same credential reaches a services service, and an exec
// grant reaches the command services but not the terminal.
func TestServicesGrantReachesNoCommand(t *testing.T) {
	t.Parallel()
	doc := `{"project":"p1","container":"c1","default":"deny","groups":{
		"svc":{"type":"token","header":"X-Svc","value":"s"},
		"runner":{"type":"token","header":"X-Exec","value":"e"}},
		"permissions":{"svc":{"services":true},"runner":{"exec":true}}}`
	perm := filepath.Join(t.TempDir(), "perm.json")
	if err := os.WriteFile(perm, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, "--services", strings.Join(append([]string{"vault"}, commandServices...), ","), "--permissions-file", perm)
	a.ready(t)
	param := regexp.MustCompile(`\{[^}]+\}`)
	routes := 0
	for _, name := range commandServices {
		// The service's own port: the agent's own user is trusted there.
		resp, err := client.Get("http://127.0.0.1:" + strconv.Itoa(agent.Port(a.base, name)) + "/openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Info struct {
				Description string `json:"description"`
			} `json:"info"`
			Paths map[string]map[string]any `json:"paths"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || len(doc.Paths) == 0 {
			t.Fatalf("%s openapi: %v", name, err)
		}
		program := map[bool]string{true: "terminal", false: "exec"}[name == "terminal"]
		if !strings.Contains(doc.Info.Description, "proxy permissions judge every route of this service as program "+program) {
			t.Errorf("%s's OpenAPI document does not name its program %s: %s", name, program, doc.Info.Description)
		}
		paths := make([]string, 0, len(doc.Paths))
		for p := range doc.Paths {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			for method := range doc.Paths[p] {
				method = strings.ToUpper(method)
				if method == "PARAMETERS" {
					continue
				}
				url := "http://" + a.gw + "/_/" + name + param.ReplaceAllString(p, "x")
				req, _ := http.NewRequest(method, url, strings.NewReader(`{"command":"id"}`))
				req.Header.Set("X-Svc", "s")
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if resp.StatusCode != 403 || m["code"] != "FORBIDDEN" {
					t.Errorf("services grant, %s %s: %d %v", method, url, resp.StatusCode, m["code"])
				}
				routes++
			}
		}
	}
	if routes < 20 {
		t.Fatalf("only %d command routes tried", routes)
	}
	if status, _, raw := get(t, "http://"+a.gw+"/_/vault/health", "X-Svc", "s"); status != 200 {
		t.Fatalf("services grant on vault: %d %s", status, raw)
	}
	for _, name := range []string{"cron", "daemon", "exec", "run"} {
		if status, _, raw := get(t, "http://"+a.gw+"/_/"+name+"/health", "X-Exec", "e"); status != 200 {
			t.Errorf("exec grant on %s: %d %s", name, status, raw)
		}
	}
	if status, m, raw := get(t, "http://"+a.gw+"/_/terminal/health", "X-Exec", "e"); status != 403 || m["code"] != "FORBIDDEN" {
		t.Errorf("exec grant on the terminal: %d %s", status, raw)
	}
}
