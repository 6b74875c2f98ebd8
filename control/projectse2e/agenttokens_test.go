package projectse2e_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// An agent token is minted by an admin or the project's manager (or
// owner), shown once, listed without its secret, good only for its own
// container's agent routes (the effective document with its secrets, the
// network configuration) and revoked at once.
func TestAgentTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	base := "/api/v1/containers/" + f.cid + "/agent-tokens"
	s.must(201, "POST", "/api/v1/admin/containers", map[string]any{"project_id": f.pid, "name": "two", "id": "c2"}, s.admin)
	s.must(201, "POST", "/api/v1/projects/"+f.pid+"/permissions", map[string]any{"user_id": s.userID("dave"), "role": "operator"}, f.alice)
	dave := s.Login("dave@example.com", userPass)

	// Who may mint: the owner, a manager, an admin; not a viewer, an
	// operator or a stranger. 400, 404, 403 in that order.
	s.must(403, "POST", base, nil, f.bob)
	s.must(403, "POST", base, nil, dave)
	s.must(403, "POST", base, nil, f.carol)
	s.must(404, "POST", "/api/v1/containers/nosuch/agent-tokens", nil, f.alice)
	s.must(400, "POST", "/api/v1/containers/NO-SUCH/agent-tokens", nil, f.alice)
	if m := s.must(400, "POST", base, map[string]any{"name": "x"}, f.alice).Body["message"].(string); !strings.Contains(m, "name") {
		t.Fatalf("unknown body field: %s", m)
	}
	byAdmin := data(s.must(201, "POST", base, nil, s.admin))
	created := data(s.must(201, "POST", base, map[string]any{}, f.alice))
	tok, _ := created["token"].(string)
	if !regexp.MustCompile(`^agt_[A-Z2-7]{26}$`).MatchString(tok) || created["container_id"] != f.cid || created["id"] == "" || created["created_at"] == "" {
		t.Fatalf("create answer %v", created)
	}
	s.must(200, "PATCH", "/api/v1/projects/"+f.pid+"/permissions/"+s.permID(f.pid, f.bobID, f.alice), map[string]any{"role": "manager"}, f.alice)
	viaManager := data(s.must(201, "POST", base, nil, f.bob))

	list := s.must(200, "GET", base, nil, f.alice)
	for _, secret := range []string{tok, byAdmin["token"].(string), viaManager["token"].(string)} {
		if strings.Contains(string(list.Raw), secret) {
			t.Fatalf("the list shows a token: %s", list.Raw)
		}
	}
	if n := len(data(list)["tokens"].([]any)); n != 3 {
		t.Fatalf("%d tokens listed: %s", n, list.Raw)
	}
	s.must(403, "GET", base, nil, dave)

	// The agent routes: the container's own document (its secrets in
	// clear), its network; another container's are refused.
	doc := "/api/v1/containers/" + f.cid + "/proxy/permissions"
	s.must(404, "GET", doc+"/effective", nil, tok)
	s.must(200, "PUT", doc+"/groups/bot/token", map[string]any{"header": "X-Key", "value": "tok-Value-77"}, f.alice, "If-Match", "file:v0")
	eff := s.must(200, "GET", doc+"/effective", nil, tok)
	if !strings.Contains(string(eff.Raw), "tok-Value-77") {
		t.Fatalf("the agent's document lacks its secret: %s", eff.Raw)
	}
	s.must(404, "GET", "/api/v1/containers/"+f.cid+"/network", nil, tok)
	s.must(200, "PUT", "/api/v1/containers/"+f.cid+"/network", map[string]any{"type": "block"}, f.alice)
	s.must(200, "GET", "/api/v1/containers/"+f.cid+"/network", nil, tok)
	s.must(403, "GET", "/api/v1/containers/c2/proxy/permissions/effective", nil, tok)
	s.must(403, "GET", "/api/v1/containers/c2/network", nil, tok)
	s.must(404, "GET", "/api/v1/containers/nosuch/proxy/permissions/effective", nil, tok)

	// People and svc_ tokens do not read the effective document, whatever
	// their role.
	svc := data(s.must(201, "POST", "/api/v1/auth/tokens", map[string]any{"alias": "x"}, f.alice))["token"].(string)
	for _, cred := range []string{f.alice, svc, f.bob, s.admin} {
		s.must(403, "GET", doc+"/effective", nil, cred)
	}

	// Every route that does not take agents answers an agent token 401;
	// the ones that do answer another container's 403.
	agentRoutes := s.everyRouteWith(tok, f.cid, "c2")
	if want := []string{"GET /api/v1/containers/{id}/network", "GET /api/v1/containers/{id}/network/effective",
		"GET /api/v1/containers/{id}/proxy/permissions/effective", "GET /api/v1/containers/{id}/ssh-keys/effective",
		"POST /api/v1/containers/{id}/activity", "POST /api/v1/containers/{id}/claims",
		"POST /api/v1/containers/{id}/network/remote-status"}; strings.Join(agentRoutes, ",") != strings.Join(want, ",") {
		t.Fatalf("routes taking agent tokens: %v, want %v", agentRoutes, want)
	}

	// Revocation stops the token at once; another one keeps working
	// (rotation: mint, switch, revoke).
	s.must(200, "DELETE", base+"/"+created["id"].(string), nil, f.alice)
	s.must(401, "GET", doc+"/effective", nil, tok)
	s.must(404, "DELETE", base+"/"+created["id"].(string), nil, f.alice)
	s.must(400, "DELETE", base+"/Bad-Id", nil, f.alice)
	s.must(200, "GET", doc+"/effective", nil, viaManager["token"].(string))
	s.must(401, "GET", doc+"/effective", nil, "agt_AAAAAAAAAAAAAAAAAAAAAAAAAA")

	if strings.Contains(s.Stderr(), "agt_") {
		t.Fatal("an agent token reached the control plane's log")
	}
	var kinds []string
	for _, e := range s.events() {
		if strings.HasPrefix(e.EventType, "container.agent_token.") {
			kinds = append(kinds, e.EventType)
			if e.ContainerID != f.cid || e.ProjectID != f.pid || strings.Contains(string(e.Payload), "agt_") {
				t.Fatalf("event %+v", e)
			}
		}
	}
	sort.Strings(kinds)
	if strings.Join(kinds, ",") != "container.agent_token.created,container.agent_token.created,container.agent_token.created,container.agent_token.revoked" {
		t.Fatalf("events %v", kinds)
	}
}

// everyRouteWith sends the agent token to every credentialed route of the
// OpenAPI document ({id} = own, then other); it fails the test on any
// route that is not an agent route and does not answer 401, and returns
// the agent routes ("METHOD path"), each of which must answer other 403.
func (s *server) everyRouteWith(tok, own, other string) []string {
	s.t.Helper()
	r := s.must(200, "GET", "/openapi.json", nil, "")
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.Raw, &doc); err != nil {
		s.t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	var agents []string
	n := 0
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				Security []map[string]any `json:"security"`
				Agent    bool             `json:"x-agent-token"`
			}
			if err := json.Unmarshal(raw, &op); err != nil || len(op.Security) == 0 {
				continue
			}
			m := strings.ToUpper(method)
			fill := func(id string) string {
				return param.ReplaceAllStringFunc(path, func(p string) string {
					if p == "{id}" {
						return id
					}
					return "x1"
				})
			}
			var body any
			if m != http.MethodGet && m != http.MethodDelete {
				body = map[string]any{}
			}
			n++
			if op.Agent {
				agents = append(agents, m+" "+path)
				if got := s.call(m, fill(other), body, tok); got.Status != 403 {
					s.t.Errorf("%s %s with another container's agent token: %d, want 403", m, path, got.Status)
				}
				continue
			}
			if got := s.call(m, fill(own), body, tok); got.Status != 401 {
				s.t.Errorf("%s %s with an agent token: %d, want 401: %s", m, path, got.Status, got.Raw)
			}
		}
	}
	if n < 40 {
		s.t.Fatalf("only %d credentialed routes in the OpenAPI document", n)
	}
	sort.Strings(agents)
	return agents
}

func (s *server) userID(name string) string {
	s.t.Helper()
	id, _ := s.user(name)
	return id
}

// permID is the id of userID's permission on project pid.
func (s *server) permID(pid, userID, owner string) string {
	s.t.Helper()
	for _, p := range s.must(200, "GET", "/api/v1/projects/"+pid+"/permissions", nil, owner).Body["data"].([]any) {
		if m := p.(map[string]any); m["user_id"] == userID {
			return m["id"].(string)
		}
	}
	s.t.Fatalf("no permission of %s on %s", userID, pid)
	return ""
}
