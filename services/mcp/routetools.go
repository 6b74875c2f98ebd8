package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
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
// a model is the route's too: its text (x-text, platform.ToolText), its
// budget, its pages and its image (answer.go). Only process_run has a view
// of this service's own (tools_process.go).

// routeTool is one operation of another service offered as a tool.
type routeTool struct {
	route *platform.RouteTool
	tool  *mcp.Tool
	face  face
}

// face is how a route tool reads for a model, as its x-mcp-tool says.
type face struct {
	Text   string             `json:"x-text"`
	Budget string             `json:"x-budget"` // "tool", "operation" or ""
	Pages  string             `json:"x-pages"`
	Image  string             `json:"x-image"`
	text   *platform.ToolText // nil: the answer's JSON
}

// view is process_run's reading of its answer, beside its route's face:
// args adapts the operation's arguments to the budget max, answer reads
// out (the operation's answer: typed in memory, JSON over HTTP).
type view struct {
	args   func(args map[string]json.RawMessage, max int)
	answer func(out any, max int) (*mcp.CallToolResult, error)
}

// views are the route tools' own views by tool name.
var views = map[string]view{}

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
		rt := &routeTool{route: r, tool: &mcp.Tool{}}
		if json.Unmarshal(r.Doc, rt.tool) != nil || json.Unmarshal(r.Doc, &rt.face) != nil || toolService(rt.tool.Name) != service {
			s.log.Warn("a tool's name does not start with its service's", "tool", r.Name, "service", service)
			continue
		}
		if rt.face.Text != "" {
			if rt.face.text, err = platform.ParseToolText(rt.tool.Name, rt.face.Text); err != nil {
				s.log.Warn("a tool's x-text does not parse: its answers read as JSON", "tool", rt.tool.Name, "err", err)
			}
		}
		out = append(out, rt)
	}
	return out, nil
}

// peer is the host of service when this process serves it.
func (s *Service) peer(service string) *platform.Host {
	return s.deps.Peers.Host(service)
}

// routeHandler calls rt for a tools/call and answers it as its face, or
// its view, reads.
func (s *Service) routeHandler(rt *routeTool) mcp.ToolHandler {
	v, f := views[rt.tool.Name], rt.face
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]json.RawMessage{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return failed(fault.Invalid("arguments", "must be a JSON object")), nil
			}
		}
		max, offset := s.set.OutputBudget, 0
		if f.Budget != "" || f.Pages != "" {
			if n, ok, err := argCount(args, "max_chars"); err != nil {
				return failed(err), nil
			} else if ok {
				max = s.budget(n)
			}
			if f.Budget == "operation" {
				args["max_chars"] = json.RawMessage(strconv.Itoa(max))
			}
		}
		if f.Pages != "" {
			n, _, err := argCount(args, "offset")
			if err != nil {
				return failed(err), nil
			}
			offset = n
		}
		if v.args != nil {
			v.args(args, max)
		}
		out, err := s.callRoute(ctx, callerOf(req.Extra), rt, args)
		if err != nil {
			return failed(err), nil
		}
		var res *mcp.CallToolResult
		if v.answer != nil {
			res, err = v.answer(out, max)
		} else {
			res, err = s.answer(rt, args, out, max, offset)
		}
		if err != nil {
			return failed(err), nil
		}
		return res, nil
	}
}

// argCount takes the non-negative integer argument name out of args
// (ok: it was given), for this service rather than the operation.
func argCount(args map[string]json.RawMessage, name string) (n int, ok bool, err error) {
	raw, ok := args[name]
	if !ok {
		return 0, false, nil
	}
	delete(args, name)
	if json.Unmarshal(raw, &n) != nil || n < 0 {
		return 0, false, fault.Invalid(name, "must be a non-negative integer")
	}
	return n, true, nil
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
