package platform_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
)

var queryParams = []platform.Param{
	{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: 1000}, Default: "50"},
	{Name: "offset", Type: "integer", Range: &platform.Range{Min: 0, Max: math.Inf(1)}},
	{Name: "scale", Type: "number", Range: &platform.Range{Min: 0, ExclusiveMin: true, Max: 1}, Default: "1"},
	{Name: "hidden", Type: "boolean"},
	{Name: "format", Enum: []string{"png", "jpeg"}, Default: "png"},
	{Name: "path", Required: true},
}

// queryHost echoes the typed values it was handed, through a Fiber and a
// net/http route declaring the same parameters.
func queryHost() *platform.Host {
	echo := func(q platform.Query) map[string]any {
		return map[string]any{"limit": q.Int("limit"), "offset": q.Int("offset"), "has_offset": q.Has("offset"),
			"scale": q.Float("scale"), "hidden": q.Bool("hidden"), "format": q.String("format"), "path": q.String("path")}
	}
	return platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "q"}, Logger: quiet}, []platform.Route{
		{Method: "GET", Path: "/fiber", Summary: "f", Query: queryParams,
			Handler: func(c fiber.Ctx) error { return c.JSON(echo(platform.QueryOf(c))) }},
		{Method: "GET", Path: "/http", Summary: "h", Query: queryParams,
			HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(echo(platform.QueryFrom(r.Context())))
			})},
	})
}

func TestQueryParametersAreParsedBeforeTheHandler(t *testing.T) {
	t.Parallel()
	h := queryHost()
	cases := []struct {
		query  string
		status int
		want   map[string]any // on 200: values; on 400: details
		msg    string         // on 400: part of the message
	}{
		{"path=/a", 200, map[string]any{"limit": 50.0, "offset": 0.0, "has_offset": false, "scale": 1.0, "hidden": false, "format": "png", "path": "/a"}, ""},
		{"path=/a&limit=1000&offset=0&scale=0.25&hidden=1&format=jpeg", 200,
			map[string]any{"limit": 1000.0, "offset": 0.0, "has_offset": true, "scale": 0.25, "hidden": true, "format": "jpeg", "path": "/a"}, ""},
		{"path=/a&hidden=false&limit=", 200, map[string]any{"hidden": false, "limit": 50.0}, ""},
		{"path=/a&hidden=0&_=1700000000", 200, map[string]any{"hidden": false}, ""},
		{"", 400, map[string]any{"details": "path"}, "query parameter path: is required"},
		{"path=", 400, map[string]any{"details": "path"}, "is required"},
		{"path=/a&limit=0", 400, map[string]any{"details": "limit"}, "limit: must be an integer at least 1 and at most 1000"},
		{"path=/a&limit=1001", 400, map[string]any{"details": "limit"}, "at most 1000"},
		{"path=/a&limit=ten", 400, map[string]any{"details": "limit"}, "must be an integer"},
		{"path=/a&limit=1e2", 400, map[string]any{"details": "limit"}, "must be an integer"},
		{"path=/a&limit=5&limit=6", 400, map[string]any{"details": "limit"}, "at most once"},
		{"path=/a&offset=-1", 400, map[string]any{"details": "offset"}, "at least 0"},
		{"path=/a&scale=0", 400, map[string]any{"details": "scale"}, "must be a number above 0 and at most 1"},
		{"path=/a&scale=1.5", 400, map[string]any{"details": "scale"}, "at most 1"},
		{"path=/a&scale=NaN", 400, map[string]any{"details": "scale"}, "must be a number"},
		{"path=/a&hidden=yes", 400, map[string]any{"details": "hidden"}, "hidden: must be true, false, 1 or 0"},
		{"path=/a&hidden=TRUE", 400, map[string]any{"details": "hidden"}, "must be true, false, 1 or 0"},
		{"path=/a&hidden=", 400, map[string]any{"details": "hidden"}, "must be true, false, 1 or 0"},
		{"path=/a&format=gif", 400, map[string]any{"details": "format"}, "format: must be one of png, jpeg"},
	}
	for _, route := range []string{"/fiber", "/http"} {
		for _, tc := range cases {
			resp, err := h.App().Test(platformtest.NewRequest("GET", route+"?"+tc.query, nil))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var got map[string]any
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("%s?%s: %d %s", route, tc.query, resp.StatusCode, raw)
			}
			if resp.StatusCode != tc.status {
				t.Errorf("%s?%s: status %d, want %d: %s", route, tc.query, resp.StatusCode, tc.status, raw)
				continue
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s?%s: %s = %v, want %v (%s)", route, tc.query, k, got[k], v, raw)
				}
			}
			if tc.status == 400 && (got["code"] != fault.CodeInvalid || !strings.Contains(got["message"].(string), tc.msg)) {
				t.Errorf("%s?%s: error body %s, want code INVALID and message containing %q", route, tc.query, raw, tc.msg)
			}
		}
	}
}

func TestQueryRulesAreInTheDocument(t *testing.T) {
	t.Parallel()
	raw, err := queryHost().OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name     string         `json:"name"`
				Required bool           `json:"required"`
				Schema   map[string]any `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, p := range doc.Paths["/fiber"]["get"].Parameters {
		got[p.Name] = p.Schema
		if p.Name == "path" && !p.Required {
			t.Error("path is not required in the document")
		}
	}
	if s := got["scale"]; s["minimum"] != 0.0 || s["exclusiveMinimum"] != true || s["maximum"] != 1.0 || s["default"] != 1.0 {
		t.Errorf("scale schema %v", s)
	}
	if s := got["limit"]; s["type"] != "integer" || s["minimum"] != 1.0 || s["maximum"] != 1000.0 || s["default"] != 50.0 {
		t.Errorf("limit schema %v", s)
	}
	if s := got["offset"]; s["maximum"] != nil || s["minimum"] != 0.0 {
		t.Errorf("offset schema %v", s)
	}
}

func TestBadParameterDeclarationFailsAtStart(t *testing.T) {
	t.Parallel()
	for _, p := range []platform.Param{
		{Name: "n", Type: "integer", Range: &platform.Range{Min: 1, Max: 10}, Default: "0"},
		{Name: "b", Type: "boolean", Default: "yes"},
		{Name: "s", Range: &platform.Range{Max: 1}},
		{Name: "t", Type: "date"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("param %+v: host built without complaint", p)
				}
			}()
			platform.NewHost(platform.HostConfig{Logger: quiet}, []platform.Route{
				{Method: "GET", Path: "/x", Query: []platform.Param{p}, Handler: func(c fiber.Ctx) error { return nil }}})
		}()
	}
}
