package platform

import (
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Info is the title block of a service's OpenAPI document.
type Info struct {
	Name        string // service identifier, e.g. "cron"
	Title       string
	Version     string
	Description string
}

// OpenAPI builds an OpenAPI 3.0 document from a route table. It fails only
// when the table itself is inconsistent (a duplicate method and path, or a
// path parameter the path does not contain), which callers turn into 500
// BACKEND_ERROR at /openapi.json.
func OpenAPI(info Info, routes []Route) (map[string]any, error) {
	return openAPI(info, routes, false)
}

// openAPI is OpenAPI for a host; authed says the host has an Authenticator,
// so a route without a policy is shown as signed-in.
func openAPI(info Info, routes []Route, authed bool) (map[string]any, error) {
	secured := false
	paths := map[string]any{}
	seen := map[string]bool{}
	for _, r := range routes {
		key := r.Method + " " + r.Path
		if seen[key] {
			return nil, &Error{Code: CodeBackend, Message: "duplicate route " + key}
		}
		seen[key] = true
		p := openapiPath(r.Path)
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		op := operation(r, authed)
		if _, ok := op["x-policy"]; ok && r.Policy.Access != AccessPublic {
			secured = true
		}
		if r.Method == MethodAny {
			for _, m := range []string{"get", "put", "post", "delete", "options", "head", "patch"} {
				item[m] = op
			}
			op["x-methods"] = WebDAVMethods
		} else {
			item[strings.ToLower(r.Method)] = op
		}
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       info.Title,
			"version":     info.Version,
			"description": info.Description,
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": map[string]any{
				"Error": map[string]any{
					"type":     "object",
					"required": []string{"code", "details", "message"},
					"properties": map[string]any{
						"code":    map[string]any{"type": "string"},
						"details": map[string]any{"type": "string"},
						"message": map[string]any{"type": "string"},
					},
				},
			},
		},
	}
	if secured {
		doc["components"].(map[string]any)["securitySchemes"] = map[string]any{
			"bearerAuth": map[string]any{"type": "http", "scheme": "bearer",
				"description": "a session JWT from login or an svc_ auth token; routes marked x-agent-token also take a container's agt_ agent token, which every other route answers 401"},
		}
	}
	return doc, nil
}

// policyDoc adds the route's policy (security, x-policy) and rate limits
// (x-rate-limits, the 429 answer) to op. Routes of a host without an
// Authenticator that declare no policy are shown without one.
func policyDoc(op map[string]any, r Route, authed bool) {
	pol := r.Policy
	if pol.Access == AccessDefault {
		if !authed {
			if len(r.Limits) > 0 {
				limitsDoc(op, r.Limits)
			}
			return
		}
		pol.Access = AccessSignedIn
	}
	op["x-policy"] = pol.Label()
	if pol.Access == AccessPublic {
		op["security"] = []any{}
	} else {
		op["security"] = []any{map[string]any{"bearerAuth": []string{}}}
		who := map[Access]string{AccessSignedIn: "any signed-in caller", AccessAdmin: "a signed-in user with the admin role"}[pol.Access]
		if pol.Doc != "" {
			who += "; " + pol.Doc
		}
		if pol.Agents {
			op["x-agent-token"] = true
			who += "; also the container's agent token (agt_)"
		}
		desc, _ := op["description"].(string)
		op["description"] = strings.TrimSpace(desc + "\n\nPolicy `" + pol.Label() + "`: " + who + ".")
	}
	limitsDoc(op, r.Limits)
}

func limitsDoc(op map[string]any, limits []RateLimit) {
	var out []any
	for _, l := range limits {
		if l.N <= 0 || l.Per <= 0 {
			continue
		}
		m := map[string]any{"name": l.Name, "by": l.By.String(), "limit": l.N, "window_seconds": int64(l.Per / time.Second)}
		if l.Value != "" {
			m["key"] = l.Value
		}
		if l.Failures {
			m["counts"] = "failed attempts"
		} else {
			m["counts"] = "requests"
		}
		out = append(out, m)
	}
	if len(out) > 0 {
		op["x-rate-limits"] = out
	}
}

func operation(r Route, authed bool) map[string]any {
	op := map[string]any{
		"operationId": operationID(r),
		"summary":     r.Summary,
	}
	if r.Description != "" {
		op["description"] = r.Description
	}
	if len(r.Tags) > 0 {
		op["tags"] = r.Tags
	}
	policyDoc(op, r, authed)
	if r.WebSocket {
		op["x-websocket"] = true
	}
	var params []any
	for _, name := range pathParams(r.Path) {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, q := range r.Query {
		in := q.In
		if in == "" {
			in = "query"
		}
		typ := q.Type
		if typ == "" {
			typ = "string"
		}
		schema := map[string]any{"type": typ}
		if len(q.Enum) > 0 {
			schema["enum"] = q.Enum
		}
		if q.Range != nil {
			if !math.IsInf(q.Range.Min, -1) {
				schema["minimum"] = q.Range.Min
				if q.Range.ExclusiveMin {
					schema["exclusiveMinimum"] = true
				}
			}
			if !math.IsInf(q.Range.Max, 1) {
				schema["maximum"] = q.Range.Max
				if q.Range.ExclusiveMax {
					schema["exclusiveMaximum"] = true
				}
			}
		}
		if q.Default != "" {
			if v, err := parseParam(q, q.Default); err == nil {
				schema["default"] = v
			}
		}
		p := map[string]any{"name": q.Name, "in": in, "required": q.Required || in == "path", "schema": schema}
		desc := q.Description
		if typ == "boolean" && in == "query" {
			desc = strings.TrimSpace(desc + " (true, false, 1 or 0)")
		}
		if desc != "" {
			p["description"] = desc
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if r.Body != nil {
		op["requestBody"] = map[string]any{
			"required": true,
			"content":  map[string]any{"application/json": map[string]any{"schema": Schema(r.Body)}},
		}
	}
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	resp := map[string]any{"description": http.StatusText(status)}
	switch {
	case r.ContentType != "":
		resp["content"] = map[string]any{r.ContentType: map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
	case r.Response != nil:
		resp["content"] = map[string]any{"application/json": map[string]any{"schema": Schema(r.Response)}}
	}
	responses := map[string]any{strconv.Itoa(status): resp}
	responses["default"] = map[string]any{
		"description": "error",
		"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
	}
	if _, ok := op["x-rate-limits"]; ok {
		responses["429"] = map[string]any{
			"description": "Too Many Requests: a rate limit of x-rate-limits is exhausted",
			"headers": map[string]any{"Retry-After": map[string]any{
				"description": "seconds until the window ends", "schema": map[string]any{"type": "integer"}}},
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
		}
	}
	op["responses"] = responses
	return op
}

func operationID(r Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, part := range strings.FieldsFunc(r.Path, func(c rune) bool { return c == '/' || c == '{' || c == '}' || c == '-' || c == '_' || c == '.' }) {
		if part == "api" || part == "v1" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

var timeType = reflect.TypeOf(time.Time{})

// SchemaProvider is a type with its own JSON encoding (a value of several
// forms) that states its schema instead of the one its fields would give.
type SchemaProvider interface {
	JSONSchema() map[string]any
}

// Schema derives a JSON schema from a Go value through its json tags. A field
// tagged `required:"true"` is listed as required; `doc:"..."` describes it;
// `enum:"a,b"` restricts it.
func Schema(v any) map[string]any {
	return schemaOf(reflect.TypeOf(v), map[reflect.Type]bool{})
}

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if s, ok := reflect.New(t).Interface().(SchemaProvider); ok {
		return s.JSONSchema()
	}
	if _, ok := reflect.New(t).Interface().(json.Marshaler); ok && t.Kind() != reflect.Struct {
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), seen)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), seen)}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if seen[t] {
			return map[string]any{"type": "object"}
		}
		seen[t] = true
		defer delete(seen, t)
		props := map[string]any{}
		var required []string
		addStructFields(t, props, &required, seen)
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			sort.Strings(required)
			s["required"] = required
		}
		return s
	}
	return map[string]any{}
}

func addStructFields(t reflect.Type, props map[string]any, required *[]string, seen map[reflect.Type]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addStructFields(ft, props, required, seen)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		s := schemaOf(f.Type, seen)
		if d := f.Tag.Get("doc"); d != "" {
			s["description"] = d
		}
		if e := f.Tag.Get("enum"); e != "" {
			s["enum"] = strings.Split(e, ",")
		}
		if f.Type.Kind() == reflect.Pointer {
			s["nullable"] = true
		}
		props[name] = s
		if f.Tag.Get("required") == "true" {
			*required = append(*required, name)
		}
	}
}

// MarshalOpenAPI renders a document as JSON and YAML. The YAML keeps keys in
// the order people write them (openapi, info, paths, components; in an
// operation summary, description, parameters, requestBody, responses), so
// the document reads top-down; JSON stays sorted.
func MarshalOpenAPI(doc map[string]any) (jsonDoc, yamlDoc []byte, err error) {
	jsonDoc, err = json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	// Round-trip through JSON so YAML sees plain maps and slices only.
	var plain any
	if err = json.Unmarshal(jsonDoc, &plain); err != nil {
		return nil, nil, err
	}
	node, err := yamlNode(plain, yamlDocument)
	if err != nil {
		return nil, nil, err
	}
	yamlDoc, err = yaml.Marshal(node)
	return jsonDoc, yamlDoc, err
}

// yamlKind is where a value sits in an OpenAPI document; it decides the
// order of a mapping's keys and what its children are.
type yamlKind int

const (
	yamlOther yamlKind = iota
	yamlDocument
	yamlInfo
	yamlPaths      // path -> path item
	yamlPathItem   // method -> operation
	yamlOperation  // summary, parameters, ...
	yamlParameter  // one entry of parameters
	yamlBody       // requestBody
	yamlResponses  // status -> response
	yamlResponse   // description, content
	yamlContent    // media type -> {schema}
	yamlMedia      // {schema}
	yamlSchema     // type, properties, ...
	yamlSchemaMap  // name -> schema (properties, components.schemas)
	yamlComponents // schemas
)

// yamlOrder lists a kind's keys in writing order; keys not listed follow,
// sorted.
var yamlOrder = map[yamlKind][]string{
	yamlDocument:  {"openapi", "info", "servers", "security", "tags", "paths", "components"},
	yamlInfo:      {"title", "version", "description"},
	yamlPathItem:  {"summary", "description", "parameters", "get", "put", "post", "patch", "delete", "head", "options", "trace"},
	yamlOperation: {"tags", "summary", "description", "operationId", "parameters", "requestBody", "responses", "security"},
	yamlParameter: {"name", "in", "description", "required", "schema"},
	yamlBody:      {"description", "required", "content"},
	yamlResponse:  {"description", "headers", "content"},
	yamlMedia:     {"schema", "example"},
	yamlSchema: {"$ref", "type", "format", "description", "enum", "nullable", "required", "properties",
		"items", "additionalProperties"},
}

// yamlChild is the kind of the value under key in a mapping of kind k.
func yamlChild(k yamlKind, key string) yamlKind {
	switch k {
	case yamlDocument:
		switch key {
		case "info":
			return yamlInfo
		case "paths":
			return yamlPaths
		case "components":
			return yamlComponents
		}
	case yamlPaths:
		return yamlPathItem
	case yamlPathItem:
		if key == "parameters" {
			return yamlParameter
		}
		return yamlOperation
	case yamlOperation:
		switch key {
		case "parameters":
			return yamlParameter // applies to each element
		case "requestBody":
			return yamlBody
		case "responses":
			return yamlResponses
		}
	case yamlParameter, yamlMedia:
		if key == "schema" {
			return yamlSchema
		}
	case yamlBody, yamlResponse:
		if key == "content" {
			return yamlContent
		}
	case yamlResponses:
		return yamlResponse
	case yamlContent:
		return yamlMedia
	case yamlSchema:
		switch key {
		case "properties":
			return yamlSchemaMap
		case "items", "additionalProperties":
			return yamlSchema
		}
	case yamlSchemaMap:
		return yamlSchema
	case yamlComponents:
		if key == "schemas" {
			return yamlSchemaMap
		}
	}
	return yamlOther
}

// yamlNode turns a plain JSON value into a YAML node with its mappings'
// keys in writing order.
func yamlNode(v any, k yamlKind) (*yaml.Node, error) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for key := range v {
			keys = append(keys, key)
		}
		rank := map[string]int{}
		for i, key := range yamlOrder[k] {
			rank[key] = i + 1
		}
		sort.Slice(keys, func(i, j int) bool {
			ri, rj := rank[keys[i]], rank[keys[j]]
			switch {
			case ri != 0 && rj != 0:
				return ri < rj
			case ri != 0 || rj != 0:
				return ri != 0 // listed keys first
			}
			return keys[i] < keys[j]
		})
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, key := range keys {
			kn := &yaml.Node{}
			if err := kn.Encode(key); err != nil {
				return nil, err
			}
			vn, err := yamlNode(v[key], yamlChild(k, key))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, kn, vn)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range v {
			en, err := yamlNode(e, k)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, en)
		}
		return n, nil
	default:
		n := &yaml.Node{}
		err := n.Encode(v)
		return n, err
	}
}
