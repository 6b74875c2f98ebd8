package platform_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/gofiber/fiber/v3"
	"gopkg.in/yaml.v3"

	"deckhand/platform"
)

// keys lists a YAML mapping's keys in document order.
func keys(t *testing.T, n *yaml.Node, where string) []string {
	t.Helper()
	if n == nil || n.Kind != yaml.MappingNode {
		t.Fatalf("%s is not a mapping", where)
	}
	var out []string
	for i := 0; i < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

// get is the value under key in mapping n.
func get(t *testing.T, n *yaml.Node, key string) *yaml.Node {
	t.Helper()
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	t.Fatalf("no key %q in %v", key, keys(t, n, key))
	return nil
}

// The YAML document reads top-down as people write OpenAPI by hand, and
// holds exactly what the JSON document holds.
func TestOpenAPIYAMLKeyOrder(t *testing.T) {
	t.Parallel()
	routes := append(testRoutes(), platform.Route{Method: http.MethodPut, Path: "/api/v1/things/{id}",
		Summary: "replace a thing", Description: "Replaces it.", Tags: []string{"things"},
		Query: []platform.Param{{Name: "dry_run", Type: "boolean", Description: "only check"}},
		Body:  echoReq{}, Response: echoReq{}, Handler: func(c fiber.Ctx) error { return nil }})
	h := platform.NewHost(platform.HostConfig{Logger: quiet,
		Info: platform.Info{Name: "test", Title: "Test", Version: "1", Description: "a test service"}}, routes)
	status, _, raw := do(t, h, "GET", "/openapi.yaml", "")
	if status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(raw), &root); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	doc := root.Content[0]
	check := func(where string, got []string, want ...string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s keys = %v, want %v", where, got, want)
		}
	}
	check("top level", keys(t, doc, "document"), "openapi", "info", "servers", "tags", "paths", "components")
	check("info", keys(t, get(t, doc, "info"), "info"), "title", "version", "description")
	item := get(t, get(t, doc, "paths"), "/api/v1/things/{id}")
	check("path item", keys(t, item, "path item"), "get", "put")
	put := get(t, item, "put")
	check("operation", keys(t, put, "put"), "tags", "summary", "description", "operationId", "parameters",
		"requestBody", "responses")
	params := get(t, put, "parameters")
	check("parameter", keys(t, params.Content[0], "parameter"), "name", "in", "required", "schema")
	check("query parameter", keys(t, params.Content[1], "parameter"), "name", "in", "description", "required", "schema")
	check("requestBody", keys(t, get(t, put, "requestBody"), "requestBody"), "required", "content")
	check("responses", keys(t, get(t, put, "responses"), "responses"), "200", "default")
	ref := get(t, get(t, get(t, get(t, put, "requestBody"), "content"), "application/json"), "schema")
	check("body schema", keys(t, ref, "schema"), "$ref")
	if got := get(t, ref, "$ref").Value; got != "#/components/schemas/echoReq" {
		t.Errorf("body $ref %q", got)
	}
	schema := get(t, get(t, get(t, doc, "components"), "schemas"), "echoReq")
	check("schema", keys(t, schema, "schema"), "type", "required", "properties")
	check("properties", keys(t, get(t, schema, "properties"), "properties"), "count", "name")

	// same content as the JSON document
	jsonDoc, err := h.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON, fromYAML any
	if err := json.Unmarshal(jsonDoc, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(raw), &fromYAML); err != nil {
		t.Fatal(err)
	}
	// YAML decodes numbers as int; compare through JSON
	y, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	var yamlAsJSON any
	_ = json.Unmarshal(y, &yamlAsJSON)
	if !reflect.DeepEqual(fromJSON, yamlAsJSON) {
		t.Errorf("YAML and JSON documents differ:\n%s", raw)
	}
}
