package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
	"deckhand/platform/fault"
)

// A route that is a tool (platform.Tool) is listed and called from here:
// its name, description, hints and schemas are the x-mcp-tool of its
// operation in the service's OpenAPI document, read from the service's
// host when it runs in this process and from its port otherwise. A call
// runs the operation through that host in memory (Host.CallTool: the
// binder's rules, the domain method, its typed answer) or, for a service
// in another process, as the route's HTTP request. How an answer reads for
// a model is the route's too (its x-text, platform.ToolText); what this
// service adds is the trimming to the budget, and views for the few
// answers a template does not say well (views): a run's failure, an image.

// routeTool is one operation of another service offered as a tool.
type routeTool struct {
	route *platform.RouteTool
	tool  *mcp.Tool
	text  *platform.ToolText // nil: the answer's JSON
}

// view is how a route tool's answer reads for a model. A tool without
// one answers its structured content as JSON text.
type view struct {
	// budget: the tool takes max_chars (default the server's budget),
	// which answer applies; it is not an argument of the operation.
	budget bool
	// offset: the tool takes offset (a character to start at, from a
	// trimmed answer's marker), which answer applies; it is not an
	// argument of the operation.
	offset bool
	// args adapts the operation's arguments to the budget max.
	args func(args map[string]json.RawMessage, max int)
	// answer is the result of out, the operation's answer (typed in
	// memory, JSON over HTTP: decode it with as).
	answer func(s *Service, args map[string]json.RawMessage, out any, max int) (*mcp.CallToolResult, error)
}

// views are the route tools' views by tool name (tools_*.go fill it).
var views = map[string]view{}

// answerAs is a view's answer taking the operation's answer as a T.
func answerAs[T any](fn func(s *Service, args map[string]json.RawMessage, out T, max int) *mcp.CallToolResult) func(*Service, map[string]json.RawMessage, any, int) (*mcp.CallToolResult, error) {
	return func(s *Service, args map[string]json.RawMessage, out any, max int) (*mcp.CallToolResult, error) {
		v, err := as[T](out)
		if err != nil {
			return nil, err
		}
		return fn(s, args, v, max), nil
	}
}

// as is an operation's answer as a T: itself when the host answered it in
// memory, else decoded from the service's JSON.
func as[T any](out any) (T, error) {
	switch v := out.(type) {
	case T:
		return v, nil
	case *T:
		if v != nil {
			return *v, nil
		}
	}
	var v T
	raw, err := json.Marshal(out)
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	return v, err
}

// argString is a string argument ("" when absent or not a string).
func argString(args map[string]json.RawMessage, name string) string {
	var s string
	_ = json.Unmarshal(args[name], &s)
	return s
}

// argInt is an integer argument (0 when absent, -1 when not an integer).
func argInt(args map[string]json.RawMessage, name string) int {
	n := 0
	if raw, ok := args[name]; ok && json.Unmarshal(raw, &n) != nil {
		return -1
	}
	return n
}

// catalog is the route tools loaded so far, by service.
type catalog struct {
	mu     sync.Mutex
	loaded map[string]bool
	tools  map[string]*routeTool
}

// loadTools registers the route tools of those of services not loaded
// yet, and answers the error of the last that could not be.
func (s *Service) loadTools(ctx context.Context, services []string) error {
	if s.build(); s.server == nil {
		return errors.New("the MCP service is closed")
	}
	c := &s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	var last error
	for _, svc := range services {
		if c.loaded[svc] {
			continue
		}
		tools, err := s.readTools(ctx, svc)
		if err != nil {
			last = err
			continue
		}
		for _, rt := range tools {
			c.tools[rt.tool.Name] = rt
			s.server.AddTool(rt.tool, s.routeHandler(rt))
		}
		c.loaded[svc] = true
	}
	return last
}

// tool is the route tool of that name loaded, or nil.
func (c *catalog) tool(name string) *routeTool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools[name]
}

// readTools reads service's route tools from its OpenAPI document (its
// host's when this process serves it) and adds the view's arguments to
// their schemas. A tool whose name does not start with its service's
// (process_run of process) is left out: reach and the allow-list judge a
// tool by that prefix.
func (s *Service) readTools(ctx context.Context, service string) ([]*routeTool, error) {
	var raw []byte
	var err error
	if h := s.peer(service); h != nil {
		raw, err = h.OpenAPIJSON()
	} else {
		raw, err = s.be.Bytes(ctx, platform.ServiceCall{Method: http.MethodGet, Service: service, Path: "/openapi.json"}, maxRead)
	}
	if err != nil {
		return nil, err
	}
	routes, err := platform.ReadTools(service, raw)
	if err != nil {
		return nil, err
	}
	var out []*routeTool
	for _, r := range routes {
		var tool mcp.Tool
		var face struct {
			Text string `json:"x-text"`
		}
		if json.Unmarshal(r.Doc, &tool) != nil || json.Unmarshal(r.Doc, &face) != nil || toolService(tool.Name) != service {
			s.log.Warn("a tool's name does not start with its service's", "tool", r.Name, "service", service)
			continue
		}
		rt := &routeTool{route: r, tool: &tool}
		if face.Text != "" {
			if rt.text, err = platform.ParseToolText(tool.Name, face.Text); err != nil {
				s.log.Warn("a tool's x-text does not parse: its answers read as JSON", "tool", tool.Name, "err", err)
			}
		}
		if v := views[tool.Name]; v.budget {
			in, _ := tool.InputSchema.(map[string]any)
			in = maps.Clone(in)
			props, _ := in["properties"].(map[string]any)
			props = maps.Clone(props)
			if props == nil {
				in, props = map[string]any{"type": "object"}, map[string]any{}
			}
			if props["max_chars"] == nil {
				props["max_chars"] = map[string]any{"type": "integer", "minimum": 0,
					"description": "characters of text to answer at most (default: the server's budget)"}
			}
			if v.offset {
				props["offset"] = map[string]any{"type": "integer", "minimum": 0,
					"description": "character to start at (from a trimmed answer's marker)"}
			}
			in["properties"] = props
			tool.InputSchema = in
		}
		out = append(out, rt)
	}
	return out, nil
}

// peer is the host of service when this process serves it.
func (s *Service) peer(service string) *platform.Host {
	return s.deps.Peers.Host(service)
}

// routeHandler calls rt for a tools/call and answers its view.
func (s *Service) routeHandler(rt *routeTool) mcp.ToolHandler {
	v := views[rt.tool.Name]
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]json.RawMessage{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return failed(fault.Invalid("arguments", "must be a JSON object")), nil
			}
		}
		max := s.set.OutputBudget
		if v.budget {
			if raw, ok := args["max_chars"]; ok {
				var n int
				if json.Unmarshal(raw, &n) != nil || n < 0 {
					return failed(fault.Invalid("max_chars", "must be a non-negative integer")), nil
				}
				max = s.budget(n)
				delete(args, "max_chars")
			}
		}
		offset, hasOffset := args["offset"]
		if v.offset && hasOffset {
			if argInt(args, "offset") < 0 || json.Unmarshal(offset, new(int)) != nil {
				return failed(fault.Invalid("offset", "must be a non-negative integer")), nil
			}
			delete(args, "offset")
		}
		if v.args != nil {
			v.args(args, max)
		}
		out, err := s.callRoute(ctx, callerOf(req.Extra), rt, args)
		if err != nil {
			return failed(err), nil
		}
		if v.offset && hasOffset {
			args["offset"] = offset
		}
		if v.answer != nil {
			res, err := v.answer(s, args, out, max)
			if err != nil {
				return failed(err), nil
			}
			return res, nil
		}
		raw, isRaw := out.(json.RawMessage)
		if !isRaw {
			if raw, err = json.Marshal(out); err != nil {
				return failed(err), nil
			}
		}
		if string(raw) == "null" {
			raw = []byte("{}")
		}
		text := string(raw)
		if rt.text != nil {
			if t, err := rt.text.Render(raw, args); err == nil {
				text = trimText(t, 0, max).Text
			} else {
				s.log.Warn("a tool's x-text failed on its answer: it reads as JSON", "tool", rt.tool.Name, "err", err)
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: json.RawMessage(raw)}, nil
	}
}

// failed is a tool's failure as the model sees it: the service's code and
// message.
func failed(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(toolErr(err))
	return &res
}

// callRoute runs rt's operation for who: through the service's host in
// memory when this process serves it, else as the route's request on its
// port (the service binds and checks the arguments either way).
func (s *Service) callRoute(ctx context.Context, who caller, rt *routeTool, args map[string]json.RawMessage) (any, error) {
	if h := s.peer(rt.route.Service); h != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		return h.CallTool(ctx, rt.tool.Name, raw)
	}
	return s.be.CallTool(ctx, rt.route, who.forward(nil), args)
}

// runTool runs the route tool name for who with args, as tools/call
// does without its view, and answers the operation's answer as a T (what
// a resource reads through the same operation).
func runTool[T any](ctx context.Context, s *Service, who caller, name string, args map[string]any) (T, error) {
	var zero T
	_ = s.loadTools(ctx, []string{toolService(name)})
	rt := s.catalog.tool(name)
	if rt == nil {
		return zero, &fault.Error{Code: fault.CodeUnavailable, Details: "tool", Message: "the " + toolService(name) + " service does not answer"}
	}
	raw := map[string]json.RawMessage{}
	for k, v := range args {
		b, err := json.Marshal(v)
		if err != nil {
			return zero, err
		}
		raw[k] = b
	}
	out, err := s.callRoute(ctx, who, rt, raw)
	if err != nil {
		return zero, err
	}
	return as[T](out)
}
