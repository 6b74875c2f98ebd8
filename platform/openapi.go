package platform

import (
	"cmp"
	"maps"
	"math"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"

	"deckhand/platform/openapi"
)

// OpenAPI builds an OpenAPI 3.0 document from a route table. It fails only
// when the table itself is inconsistent (a duplicate method and path, or a
// path parameter the path does not contain), which callers turn into 500
// BACKEND_ERROR at /openapi.json.
func OpenAPI(info Info, routes []Route) (map[string]any, error) {
	return openAPI(docConfig{info: info}, routes)
}

// docConfig is what a host tells the document builder about itself.
type docConfig struct {
	info Info
	// authed: the host has an Authenticator, so a route without a policy
	// is shown as signed-in.
	authed bool
	// envelope: success answers are {statusCode, message, data}.
	envelope bool
	servers  []Server
}

func openAPI(cfg docConfig, routes []Route) (map[string]any, error) {
	secured := false
	paths := map[string]any{}
	seen := map[string]bool{}
	d := openapi.NewBuilder()
	usedIDs := map[string]int{}
	var tags []string
	for _, r := range routes {
		key := r.Method + " " + r.Path
		if seen[key] {
			return nil, &fault.Error{Code: fault.CodeBackend, Message: "duplicate route " + key}
		}
		seen[key] = true
		if len(r.Tags) == 0 {
			r.Tags = []string{cmp.Or(cfg.info.Name, "default")}
		}
		for _, t := range r.Tags {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		p := openapiPath(r.Path)
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		methods := []string{r.Method}
		if r.Method == MethodAny {
			methods = []string{"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH"}
		}
		for _, m := range methods {
			op := operationDoc(d, r, cfg)
			if _, ok := op["x-policy"]; ok && r.Policy.Access != AccessPublic {
				secured = true
			}
			id := r.OperationID
			if id == "" || r.Method == MethodAny {
				rm := r
				rm.Method = m
				id = operationID(rm)
				if r.OperationID != "" {
					id = r.OperationID + openapi.UpperFirst(strings.ToLower(m))
				}
			}
			usedIDs[id]++
			if n := usedIDs[id]; n > 1 {
				id += strconv.Itoa(n)
			}
			op["operationId"] = id
			if r.Method == MethodAny {
				op["x-methods"] = WebDAVMethods
			}
			if !standardMethods[m] {
				// OpenAPI 3.0 has no field for WebDAV's methods: they are
				// listed by method under x-additional-operations, the way
				// OpenAPI 3.2's additionalOperations holds them.
				extra, _ := item["x-additional-operations"].(map[string]any)
				if extra == nil {
					extra = map[string]any{}
					item["x-additional-operations"] = extra
				}
				extra[m] = op
				continue
			}
			item[strings.ToLower(m)] = op
		}
	}
	errSchema := openapi.Schema(fault.ContainerError{})
	if cfg.envelope {
		errSchema = openapi.Schema(fault.ErrorEnvelope{})
	}
	d.Schemas["Error"] = errSchema
	tagList := make([]any, 0, len(tags))
	for _, t := range tags {
		tagList = append(tagList, map[string]any{"name": t})
	}
	servers := cfg.servers
	if len(servers) == 0 {
		servers = []Server{{URL: "/", Description: "where this document was read"}}
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       cfg.info.Title,
			"version":     cfg.info.Version,
			"description": cfg.info.Description,
		},
		"servers":    servers,
		"tags":       tagList,
		"paths":      paths,
		"components": map[string]any{"schemas": d.Schemas},
	}
	if secured {
		doc["components"].(map[string]any)["securitySchemes"] = map[string]any{
			"bearerAuth": map[string]any{"type": "http", "scheme": "bearer",
				"description": "a session JWT from login or an svc_ auth token; routes marked x-agent-token also take a container's agt_ agent token, which every other route answers 401"},
		}
	}
	return doc, nil
}

// standardMethods are those an OpenAPI 3.0 path item has a field for.
var standardMethods = map[string]bool{"GET": true, "PUT": true, "POST": true, "DELETE": true, "OPTIONS": true,
	"HEAD": true, "PATCH": true, "TRACE": true}

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

func limitsDoc(op map[string]any, limits []ratelimit.RateLimit) {
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

// paramDoc is a parameter's entry in an operation's parameters.
func paramDoc(q Param) map[string]any {
	in, typ := cmp.Or(q.In, "query"), cmp.Or(q.Type, "string")
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
	if q.MinLength > 0 {
		schema["minLength"] = q.MinLength
	}
	if q.MaxLength > 0 {
		schema["maxLength"] = q.MaxLength
	}
	if q.Pattern != "" {
		schema["pattern"] = q.Pattern
	}
	if q.Format != "" {
		schema["format"] = q.Format
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
	return p
}

// mediaType is a Content-Type without its parameters.
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.TrimSpace(mt)
}

func operationDoc(d *openapi.Builder, r Route, cfg docConfig) map[string]any {
	op := map[string]any{"summary": r.Summary}
	if r.Description != "" {
		op["description"] = r.Description
	}
	op["tags"] = r.Tags
	policyDoc(op, r, cfg.authed)
	if r.WebSocket {
		op["x-websocket"] = true
	}
	if t := toolDoc(r); t != nil {
		op[ToolExtension] = t
	}
	var o *operation
	if r.Op != nil {
		o = r.Op.operation()
	}
	var params []any
	if o != nil && o.in != nil {
		for _, p := range o.in.params {
			params = append(params, paramDoc(p.p))
		}
	} else {
		for _, name := range pathParams(r.Path) {
			params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range r.Query {
			params = append(params, paramDoc(q))
		}
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	switch {
	case o != nil && o.in.binary():
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			cmp.Or(r.RequestType, "application/octet-stream"): map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}}
	case o != nil && o.in.hasBody():
		// A pointer Body is optional: an absent body decodes as {}.
		op["requestBody"] = map[string]any{"required": o.in.body.typ.Kind() != reflect.Pointer,
			"content": map[string]any{"application/json": map[string]any{"schema": d.SchemaOf(o.in.body.typ)}}}
	case o == nil && r.Body != nil:
		op["requestBody"] = map[string]any{"required": true,
			"content": map[string]any{"application/json": map[string]any{"schema": d.SchemaOf(reflect.TypeOf(r.Body))}}}
	}
	status := cmp.Or(r.Status, http.StatusOK)
	resp := map[string]any{"description": http.StatusText(status)}
	envelope := cfg.envelope && !r.bare
	// data is the answer's schema (nil: none); raw: it is not JSON.
	var data map[string]any
	raw := r.ContentType != ""
	switch {
	case o != nil && !o.stream:
		if out := o.out; out != nil {
			if len(out.headers) > 0 {
				hs := map[string]any{}
				for _, h := range out.headers {
					if strings.EqualFold(h.name, "Content-Type") {
						continue
					}
					typ := "string"
					if h.num {
						typ = "integer"
					}
					hd := map[string]any{"schema": map[string]any{"type": typ}}
					if h.doc != "" {
						hd["description"] = h.doc
					}
					hs[h.name] = hd
				}
				if len(hs) > 0 {
					resp["headers"] = hs
				}
			}
			raw = out.binary()
			if out.length != nil {
				hs, _ := resp["headers"].(map[string]any)
				if hs == nil {
					hs = map[string]any{}
					resp["headers"] = hs
				}
				hs["Content-Length"] = map[string]any{"schema": map[string]any{"type": "integer"}, "description": "the body's size in bytes"}
			}
			if out.bodyTyp != nil && !raw {
				data = d.SchemaOf(out.bodyTyp)
				if out.bodyTyp.Kind() == reflect.Interface && r.Response != nil {
					// An answer of more than one shape documents its
					// usual one; the description names the others.
					data = d.SchemaOf(reflect.TypeOf(r.Response))
				}
			}
		}
	case r.Response != nil:
		data = d.SchemaOf(reflect.TypeOf(r.Response))
	}
	switch {
	case noBody(status):
	case raw:
		resp["content"] = map[string]any{cmp.Or(mediaType(r.ContentType), "application/octet-stream"): map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
	case envelope && (o == nil || !o.stream):
		resp["content"] = map[string]any{"application/json": map[string]any{"schema": envelopeSchema(data, o == nil && data == nil)}}
	case data != nil:
		resp["content"] = map[string]any{"application/json": map[string]any{"schema": data}}
	}
	if len(r.Headers) > 0 {
		hs, _ := resp["headers"].(map[string]any)
		if hs == nil {
			hs = map[string]any{}
		}
		for name, v := range r.Headers {
			hs[name] = map[string]any{"description": "always " + v, "schema": map[string]any{"type": "string", "enum": []any{v}}}
		}
		resp["headers"] = hs
	}
	responses := map[string]any{strconv.Itoa(status): resp}
	for _, st := range r.Statuses {
		alt := map[string]any{}
		for k, v := range resp {
			alt[k] = v
		}
		alt["description"] = http.StatusText(st)
		if noBody(st) {
			delete(alt, "content")
		}
		responses[strconv.Itoa(st)] = alt
	}
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

// envelopeSchema is the control plane's success body around data (nil:
// no data). loose: a route without a declared answer, whose data may be
// anything.
func envelopeSchema(data map[string]any, loose bool) map[string]any {
	props := map[string]any{
		"statusCode": map[string]any{"type": "integer"},
		"message":    map[string]any{"type": "string"},
	}
	required := []string{"message", "statusCode"}
	switch {
	case data != nil:
		props["data"] = data
		required = []string{"data", "message", "statusCode"}
	case loose:
		props["data"] = map[string]any{}
	}
	return map[string]any{"type": "object", "required": required, "properties": props}
}

// operationID derives a readable id from the method and path:
// GET /api/v1/wallet/invoices/{id} is getWalletInvoicesById.
func operationID(r Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, seg := range strings.Split(openapiPath(r.Path), "/") {
		if seg == "" || seg == "api" || seg == "v1" {
			continue
		}
		if strings.HasPrefix(seg, "{") {
			b.WriteString("By")
		}
		for _, part := range strings.FieldsFunc(seg, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) {
			b.WriteString(openapi.UpperFirst(part))
		}
	}
	return b.String()
}

// ToolExtension is the OpenAPI extension an operation carries its tool
// in: {name, title, description, annotations, inputSchema, outputSchema},
// as MCP's tools/list shows a tool, with x-text (Tool.Text), x-budget
// (Tool.Budget: "operation" when the operation takes max_chars itself,
// else "tool"), x-pages, x-image, x-failed and x-parameters (Tool.Args)
// beside them.
const ToolExtension = "x-mcp-tool"

// toolDoc is r's tool as tools/list shows it (nil when r is no tool).
func toolDoc(r Route) map[string]any {
	if r.Tool == nil {
		return nil
	}
	t := r.Tool
	ann := map[string]any{"readOnlyHint": t.ReadOnly, "idempotentHint": t.Idempotent, "openWorldHint": t.OpenWorld}
	if !t.ReadOnly {
		ann["destructiveHint"] = t.Destructive
	}
	o := r.Op.operation()
	doc := map[string]any{"name": t.Name, "description": t.Description, "annotations": ann,
		"inputSchema": toolInputSchema(t, o.in), "outputSchema": toolOutputSchema(t, o.out)}
	if t.Title != "" {
		doc["title"] = t.Title
	}
	for k, v := range map[string]string{"x-text": t.Text, "x-pages": t.Pages, "x-image": t.Image, "x-failed": t.Failed} {
		if v != "" {
			doc[k] = v
		}
	}
	if t.Budget {
		// Who cuts the text: the operation, with a max_chars of its own,
		// or the MCP service.
		doc["x-budget"] = "tool"
		if args, _ := t.operationArgs(o.in); args["max_chars"] {
			doc["x-budget"] = "operation"
		}
	}
	if len(t.Args) > 0 {
		// A caller that sends the route's request needs the parameters'
		// own names: argument name to parameter name.
		names := map[string]string{}
		for p, a := range t.Args {
			if a != "-" {
				names[a] = p
			}
		}
		doc["x-parameters"] = names
	}
	return doc
}

// toolInputSchema is one object of the input's parameters (by name) and
// its JSON body's members.
func toolInputSchema(t *Tool, in *inputPlan) map[string]any {
	props := map[string]any{}
	required := []string{}
	if in != nil {
		for _, p := range in.params {
			if t.arg(p.p.Name) == "-" {
				continue
			}
			pd := paramDoc(p.p)
			s := pd["schema"].(map[string]any)
			if d, ok := pd["description"].(string); ok {
				s["description"] = d
			}
			props[t.arg(p.p.Name)] = s
			if p.p.Required {
				required = append(required, t.arg(p.p.Name))
			}
		}
		if in.body != nil {
			body := (*openapi.Builder)(nil).SchemaOf(in.body.typ)
			bp, _ := body["properties"].(map[string]any)
			for name, s := range bp {
				props[name] = s
			}
			if in.body.typ.Kind() != reflect.Pointer {
				switch req := body["required"].(type) {
				case []string:
					required = append(required, req...)
				case []any:
					for _, n := range req {
						required = append(required, n.(string))
					}
				}
			}
		}
	}
	// The face's own arguments: the budget, unless the operation takes
	// max_chars itself, and the page's offset.
	if (t.Budget || t.Pages != "") && props["max_chars"] == nil {
		props["max_chars"] = map[string]any{"type": "integer", "minimum": 0,
			"description": "characters of text to answer at most (default: the server's output budget)"}
	}
	if t.Pages != "" {
		props["offset"] = map[string]any{"type": "integer", "minimum": 0,
			"description": "character to start at (from a cut answer's marker)"}
	}
	sort.Strings(required)
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// toolOutputSchema is the answer's schema (an object without members for
// an operation that answers nothing but success) as the structured
// content has it: a paged answer with its window's offsets, an image
// answer without its image.
func toolOutputSchema(t *Tool, out *outputPlan) map[string]any {
	if out == nil || out.bodyTyp == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	s := (*openapi.Builder)(nil).SchemaOf(out.bodyTyp)
	if t.Pages == "" && t.Image == "" {
		return s
	}
	props := maps.Clone(s["properties"].(map[string]any))
	if t.Pages != "" {
		props["next_offset"] = map[string]any{"type": "integer", "description": "the character to read on from; 0: the window reaches the end"}
		props["total_chars"] = map[string]any{"type": "integer", "description": "the characters of " + t.Pages + " in all"}
	}
	delete(props, t.Image)
	s = maps.Clone(s)
	s["properties"] = props
	if req, ok := s["required"].([]string); ok {
		s["required"] = slices.DeleteFunc(slices.Clone(req), func(n string) bool { return n == t.Image })
	}
	return s
}
