package platform_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
)

// TestCallToolOverHTTP: a route tool read from its service's OpenAPI
// document and called as the route's request on the service's port (its
// arguments as path, query and body) answers what Host.CallTool answers
// in memory, and is refused with the same codes; a service that does not
// listen is UNAVAILABLE.
func TestCallToolOverHTTP(t *testing.T) {
	h := toolHost(t)
	doc, err := h.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	tools, err := platform.ReadTools("things", doc)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*platform.RouteTool{}
	for _, rt := range tools {
		byName[rt.Name] = rt
	}
	if len(byName) != 4 || byName["thing_put"] == nil || !strings.Contains(string(byName["thing_put"].Doc), `"inputSchema"`) {
		t.Fatalf("tools read: %v", byName)
	}
	u, _ := url.Parse(platformtest.Serve(t, h))
	port, _ := strconv.Atoi(u.Port())
	c := platform.NewServiceClient("0.0.0.0", port, map[string]int{"things": 0})
	defer c.Close()
	ctx := context.Background()
	for _, args := range []string{
		`{"rack":"top","id":7,"dry_run":true,"limit":"40","title":"abc","items":[{"name":"ok"}]}`,
		`{"rack":"middle","id":7,"items":[]}`,
		`{"id":7,"items":[{"name":"ok"}]}`,
		`{"rack":"top","id":13,"items":[{"name":"ok"}]}`,
		`{"rack":{"a":1},"id":7}`,
	} {
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(args), &m)
		remote, rerr := c.CallTool(ctx, byName["thing_put"], nil, m)
		local, lerr := h.CallTool(ctx, "thing_put", json.RawMessage(args))
		if (rerr == nil) != (lerr == nil) || (lerr != nil && fault.AsError(rerr).Code != fault.AsError(lerr).Code) {
			t.Errorf("%s: over HTTP %v, in memory %v", args, rerr, lerr)
			continue
		}
		if lerr == nil {
			want, _ := json.Marshal(local)
			if string(remote) != string(want) {
				t.Errorf("%s: over HTTP %s, in memory %s", args, remote, want)
			}
		}
	}
	if _, err := c.CallTool(ctx, byName["thing_put"], nil, map[string]json.RawMessage{"id": json.RawMessage("7")}); err == nil ||
		fault.AsError(err).Message != "rack: is required" {
		t.Errorf("a path argument left out is named as the tool names it: %v", err)
	}
	if _, err := c.CallTool(ctx, byName["thing_count"], nil, map[string]json.RawMessage{"x": json.RawMessage("1")}); fault.AsError(err).Code != fault.CodeInvalid {
		t.Errorf("an argument a read has not: %v", err)
	}
	gone := platform.NewServiceClient("127.0.0.1", platformtest.FreePortBase(t, 1), map[string]int{"things": 0})
	defer gone.Close()
	if _, err := gone.CallTool(ctx, byName["thing_count"], nil, nil); fault.AsError(err).Code != fault.CodeUnavailable {
		t.Errorf("a service that does not listen: %v", err)
	}
}

// TestServiceCallPathEscapedOnce: a call's path is as on the wire (a
// route tool's path argument escaped in it): it travels so, not escaped
// again.
func TestServiceCallPathEscapedOnce(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.EscapedPath() + " " + r.URL.Path
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	c := platform.NewServiceClient("127.0.0.1", port, map[string]int{"things": 0})
	defer c.Close()
	resp, err := c.Do(context.Background(), platform.ServiceCall{Method: http.MethodPost, Service: "things",
		Path: "/api/v1/things/" + url.PathEscape("not an id/%") + "/click"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p := <-got; p != "/api/v1/things/not%20an%20id%2F%25/click /api/v1/things/not an id/%/click" {
		t.Errorf("the service got %q", p)
	}
}

// BenchmarkServiceCall: one call of a route tool on its service's
// loopback port (the hop a tool of a service in another process makes).
func BenchmarkServiceCall(b *testing.B) {
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "things"}}, []platform.Route{
		{Method: http.MethodGet, Path: "/count", Op: platform.ReadOp(func(context.Context) (shelved, error) { return shelved{ID: 3}, nil }),
			Tool: &platform.Tool{Name: "thing_count", Description: "Counts."}}})
	doc, _ := h.OpenAPIJSON()
	tools, err := platform.ReadTools("things", doc)
	if err != nil || len(tools) != 1 {
		b.Fatal(tools, err)
	}
	u, _ := url.Parse(platformtest.Serve(b, h))
	port, _ := strconv.Atoi(u.Port())
	c := platform.NewServiceClient("127.0.0.1", port, map[string]int{"things": 0})
	defer c.Close()
	for b.Loop() {
		if _, err := c.CallTool(context.Background(), tools[0], nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
