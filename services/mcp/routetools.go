package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/mcptool"
)

// A route that is a tool (platform.Tool) is listed and called from here:
// its name, description, hints and schemas are the x-mcp-tool of its
// operation in the service's OpenAPI document, read from the service's
// host when it runs in this process and from its port otherwise. A call
// runs the operation through that host in memory (Host.CallTool: the
// binder's rules, the domain method, its typed answer) or, for a service
// in another process, as the route's HTTP request. How an answer reads for
// a model is the route's too: its text (x-text, platform.ToolText), its
// budget, its pages, its image and what makes it a failure
// (platform/mcptool).

// catalog is the route tools loaded so far, by service.
type catalog struct {
	mu     sync.Mutex
	loaded map[string]bool
	tools  map[string]*mcptool.Tool
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
			c.tools[rt.MCP.Name] = rt
			s.server.AddTool(rt.MCP, s.routeHandler(rt))
		}
		c.loaded[svc] = true
	}
	return last
}

// tool is the route tool of that name loaded, or nil.
func (c *catalog) tool(name string) *mcptool.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools[name]
}

// readTools reads service's route tools from its OpenAPI document (its
// host's when this process serves it). A tool whose name does not start
// with its service's (process_run of process) is left out: reach and the
// allow-list judge a tool by that prefix.
func (s *Service) readTools(ctx context.Context, service string) ([]*mcptool.Tool, error) {
	var raw []byte
	var err error
	if h := s.deps.Peers.Host(service); h != nil {
		raw, err = h.OpenAPIJSON()
	} else {
		raw, err = s.be.Bytes(ctx, platform.ServiceCall{Method: http.MethodGet, Service: service, Path: "/openapi.json"}, maxRead)
	}
	if err != nil {
		return nil, err
	}
	tools, warnings, err := mcptool.Read(service, raw)
	for _, w := range warnings {
		s.log.Warn("a route tool of "+service+" does not read", "err", w)
	}
	return slices.DeleteFunc(tools, func(t *mcptool.Tool) bool {
		if toolService(t.MCP.Name) != service {
			s.log.Warn("a tool's name does not start with its service's", "tool", t.MCP.Name, "service", service)
			return true
		}
		return false
	}), err
}

// routeHandler calls rt for a tools/call and answers it as its face
// reads.
func (s *Service) routeHandler(rt *mcptool.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, err := rt.Prepare(req.Params.Arguments, s.set.OutputBudget)
		if err != nil {
			return failed(err), nil
		}
		out, err := s.callRoute(ctx, callerOf(req.Extra), rt, c.Args)
		if err == nil {
			var res *mcp.CallToolResult
			if res, err = rt.Answer(out, c, s.log); err == nil {
				return res, nil
			}
		}
		return failed(err), nil
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
func (s *Service) callRoute(ctx context.Context, who caller, rt *mcptool.Tool, args map[string]json.RawMessage) (any, error) {
	if h := s.deps.Peers.Host(rt.Route.Service); h != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		return h.CallTool(ctx, rt.MCP.Name, raw)
	}
	return s.be.CallTool(ctx, rt.Route, who.Forward(nil), args)
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
	return mcptool.As[T](out)
}
func ptr[T any](v T) *T { return &v }

// textResult is a tool answer whose text content is text (the structured
// content is added by the SDK from the typed output).
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// toolErr is a tool's failure as the model sees it (the SDK answers it
// as is_error with this text): the service's code and message.
func toolErr(err error) error { return errors.New(mcptool.ErrorText(err)) }
