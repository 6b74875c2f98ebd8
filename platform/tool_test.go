package platform_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"deckhand/platform"
	"deckhand/platform/fault"
)

type shelved struct {
	Shelf  string `json:"shelf"`
	ID     int64  `json:"id"`
	Title  string `json:"title"`
	Limit  uint16 `json:"limit"`
	DryRun bool   `json:"dry_run"`
	Items  int    `json:"items"`
}

// toolHost serves PUT /shelves/{shelf}/things/{id} (putThing of
// bind_test.go) as the tool thing_put, and a command and a read as tools.
func toolHost(t *testing.T) *platform.Host {
	return toolHostPoked(t, new(bool))
}

func toolHostPoked(t *testing.T, poked *bool) *platform.Host {
	t.Helper()
	put := func(_ context.Context, in putThing) (shelved, error) {
		out := shelved{Shelf: in.Shelf, ID: in.ID, Title: in.Body.Title, DryRun: in.DryRun, Items: len(in.Body.Items)}
		if in.Limit != nil {
			out.Limit = *in.Limit
		}
		return out, nil
	}
	return platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "things"}}, []platform.Route{
		{Method: http.MethodPut, Path: "/shelves/{shelf}/things/{id}", Op: platform.Op(put),
			Tool: &platform.Tool{Name: "thing_put", Title: "Put a thing", Description: "Puts a thing on a shelf.", Destructive: true,
				Args: map[string]string{"shelf": "rack"}}},
		{Method: http.MethodPost, Path: "/poke", Op: platform.CommandOp(func(context.Context, struct{}) error { *poked = true; return nil }),
			Tool: &platform.Tool{Name: "thing_poke", Description: "Pokes."}},
		{Method: http.MethodPost, Path: "/panic", Op: platform.CommandOp(func(context.Context, struct{}) error { panic("boom") }),
			Tool: &platform.Tool{Name: "thing_panic", Description: "Panics."}},
		{Method: http.MethodGet, Path: "/count", Op: platform.ReadOp(func(context.Context) (struct {
			N int `json:"n"`
		}, error) {
			return struct {
				N int `json:"n"`
			}{N: 3}, nil
		}), Tool: &platform.Tool{Name: "thing_count", Description: "Counts.", ReadOnly: true, Idempotent: true}},
	})
}

// TestCallTool: a tool's arguments are bound by the binder's rules in
// memory: parameters by name (strings, numbers, booleans), the body from
// the members left, every rule checked with the error an HTTP request
// gets; the answer is the method's own value.
func TestCallTool(t *testing.T) {
	h := toolHost(t)
	out, err := h.CallTool(context.Background(), "thing_put",
		json.RawMessage(`{"rack":"top","id":7,"dry_run":true,"limit":"40","title":"abc","items":[{"name":"ok"}],"score":0.5}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out, (shelved{Shelf: "top", ID: 7, Title: "abc", Limit: 40, DryRun: true, Items: 1}); got != want {
		t.Fatalf("answer %+v, want %+v", got, want)
	}
	for _, c := range []struct{ args, field, msg string }{
		{`{"rack":"middle","id":7,"items":[]}`, "argument rack", "must be one of"},
		{`{"id":7,"items":[{"name":"ok"}]}`, "rack", "is required"},
		{`{"rack":"top","items":[{"name":"ok"}]}`, "id", "is required"},
		{`{"rack":"top","id":13,"items":[{"name":"ok"}]}`, "id", "unlucky"},
		{`{"rack":"top","id":7,"limit":501,"items":[{"name":"ok"}]}`, "limit", "500"},
		{`{"rack":"top","id":7,"items":[{"name":"x"}]}`, "items[0].name", "2 to 8 characters"},
		{`{"rack":"top","id":7,"items":[{"name":"ok"}],"title":"forbidden"}`, "title", "forbidden"},
		{`{"rack":"top","id":7,"items":[{"name":"ok"}],"colour":"red"}`, "colour", ""},
		{`{"rack":{"a":1},"id":7}`, "rack", "must be a string"},
		{`[1]`, "arguments", "JSON object"},
	} {
		_, err := h.CallTool(context.Background(), "thing_put", json.RawMessage(c.args))
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.CodeInvalid || !strings.Contains(fe.Message, c.field) || !strings.Contains(fe.Message, c.msg) {
			t.Errorf("%s: %v, want INVALID naming %s (%s)", c.args, err, c.field, c.msg)
		}
	}
	poked := false
	if out, err := toolHostPoked(t, &poked).CallTool(context.Background(), "thing_poke", nil); err != nil || out != nil || !poked {
		t.Fatalf("a command: %v %v, ran %v", out, err, poked)
	}
	if _, err := h.CallTool(context.Background(), "thing_poke", json.RawMessage(`{"x":1}`)); err == nil || !strings.Contains(err.Error(), "x") {
		t.Fatalf("a command given an argument it has not: %v", err)
	}
	if _, err := h.CallTool(context.Background(), "thing_count", json.RawMessage(`{"x":1}`)); err == nil {
		t.Fatal("a read given an argument it has not: no error")
	}
	if _, err := h.CallTool(context.Background(), "thing_panic", nil); fault.AsError(err).Code != fault.CodeInternal {
		t.Fatalf("a method that panics: %v", err)
	}
	if _, err := h.CallTool(context.Background(), "nosuch", nil); fault.AsError(err).Code != fault.CodeNotFound {
		t.Fatalf("an unknown tool: %v", err)
	}
	if got := h.Tools(); !reflect.DeepEqual(got, []string{"thing_count", "thing_panic", "thing_poke", "thing_put"}) {
		t.Fatalf("Tools: %v", got)
	}
}

// TestToolInOpenAPI: a tool route's operation carries x-mcp-tool, whose
// input schema is the parameters and the body's members in one object
// and whose output schema is the answer's.
func TestToolInOpenAPI(t *testing.T) {
	raw, err := toolHost(t).OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Tool map[string]any `json:"x-mcp-tool"`
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	tool := doc.Paths["/shelves/{shelf}/things/{id}"]["put"].Tool
	if tool["name"] != "thing_put" || tool["title"] != "Put a thing" || tool["description"] != "Puts a thing on a shelf." {
		t.Fatalf("x-mcp-tool: %v", tool)
	}
	in := tool["inputSchema"].(map[string]any)
	props := in["properties"].(map[string]any)
	for _, name := range []string{"rack", "id", "If-Match", "dry_run", "limit", "title", "items", "score"} {
		if props[name] == nil {
			t.Errorf("input schema lacks %s: %v", name, props)
		}
	}
	if req := in["required"].([]any); len(req) != 3 || req[0] != "id" || req[1] != "items" || req[2] != "rack" {
		t.Errorf("required: %v", req)
	}
	if props["rack"].(map[string]any)["description"] != "the shelf" || props["shelf"] != nil {
		t.Errorf("a renamed parameter: %v", props)
	}
	if names, _ := tool["x-parameters"].(map[string]any); names["rack"] != "shelf" {
		t.Errorf("x-parameters: %v", tool["x-parameters"])
	}
	out := tool["outputSchema"].(map[string]any)["properties"].(map[string]any)
	if out["dry_run"] == nil || out["items"] == nil {
		t.Errorf("output schema: %v", out)
	}
	ann := tool["annotations"].(map[string]any)
	if ann["destructiveHint"] != true || ann["readOnlyHint"] != false {
		t.Errorf("annotations: %v", ann)
	}
	if doc.Paths["/count"]["get"].Tool["annotations"].(map[string]any)["destructiveHint"] != nil {
		t.Error("a read-only tool says whether it destroys")
	}
}

// TestToolFaceInOpenAPI: a tool's budget, pages and image are in its
// x-mcp-tool with the arguments and members they add or take away, and a
// face naming a member the answer lacks, or pages over an operation's own
// offset, stops the host.
func TestToolFaceInOpenAPI(t *testing.T) {
	type page struct {
		Image []byte `json:"image" required:"true"`
		Text  string `json:"text"`
	}
	type own struct {
		MaxChars int `query:"max_chars"`
		Offset   int `query:"offset"`
	}
	read := func(context.Context, struct{}) (page, error) { return page{}, nil }
	ownRead := func(context.Context, own) (page, error) { return page{}, nil }
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "x"}}, []platform.Route{
		{Method: http.MethodGet, Path: "/paged", Op: platform.Op(read),
			Tool: &platform.Tool{Name: "x_paged", Description: "d", Pages: "text", Image: "image"}},
		{Method: http.MethodGet, Path: "/cut", Op: platform.Op(read), Tool: &platform.Tool{Name: "x_cut", Description: "d", Budget: true}},
		{Method: http.MethodGet, Path: "/own", Op: platform.Op(ownRead), Tool: &platform.Tool{Name: "x_own", Description: "d", Budget: true}},
	})
	raw, err := h.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Tool struct {
				Budget string `json:"x-budget"`
				Pages  string `json:"x-pages"`
				Image  string `json:"x-image"`
				In     struct {
					Properties map[string]any `json:"properties"`
				} `json:"inputSchema"`
				Out struct {
					Properties map[string]any `json:"properties"`
					Required   []string       `json:"required"`
				} `json:"outputSchema"`
			} `json:"x-mcp-tool"`
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	paged := doc.Paths["/paged"]["get"].Tool
	if paged.Pages != "text" || paged.Image != "image" || paged.In.Properties["offset"] == nil || paged.In.Properties["max_chars"] == nil ||
		paged.Out.Properties["next_offset"] == nil || paged.Out.Properties["image"] != nil || len(paged.Out.Required) != 0 {
		t.Errorf("a paged tool with an image: %+v", paged)
	}
	if cut := doc.Paths["/cut"]["get"].Tool; cut.Budget != "tool" || cut.In.Properties["max_chars"] == nil || cut.In.Properties["offset"] != nil {
		t.Errorf("a tool the MCP service cuts: %+v", cut)
	}
	if o := doc.Paths["/own"]["get"].Tool; o.Budget != "operation" {
		t.Errorf("a tool whose operation takes max_chars: %+v", o)
	}
	for name, tool := range map[string]platform.Route{
		"no such member": {Method: http.MethodGet, Path: "/a", Op: platform.Op(read), Tool: &platform.Tool{Name: "x_a", Description: "d", Pages: "body"}},
		"own offset":     {Method: http.MethodGet, Path: "/b", Op: platform.Op(ownRead), Tool: &platform.Tool{Name: "x_b", Description: "d", Pages: "text"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: the host was built", name)
				}
			}()
			platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "x"}}, []platform.Route{tool})
		}()
	}
}

// TestToolNeedsJSON: a route whose body is bytes, or that streams its
// answer, cannot be a tool; neither can two routes share a tool's name.
func TestToolNeedsJSON(t *testing.T) {
	raw := func(context.Context, struct{ Body []byte }) (struct{}, error) { return struct{}{}, nil }
	ok := func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil }
	for name, routes := range map[string][]platform.Route{
		"bytes": {{Method: http.MethodPut, Path: "/raw", Op: platform.Op(raw), Tool: &platform.Tool{Name: "x_raw", Description: "d"}}},
		"twice": {
			{Method: http.MethodPost, Path: "/a", Op: platform.Op(ok), Tool: &platform.Tool{Name: "x_a", Description: "d"}},
			{Method: http.MethodPost, Path: "/b", Op: platform.Op(ok), Tool: &platform.Tool{Name: "x_a", Description: "d"}}},
		"handler": {{Method: http.MethodGet, Path: "/h", Handler: nil, HTTP: http.NotFoundHandler(), Tool: &platform.Tool{Name: "x_h", Description: "d"}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: the host was built", name)
				}
			}()
			platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "x"}}, routes)
		}()
	}
}
