package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

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
// a model is the route's too: its text, its budget, its pages, its image
// and what makes it a failure (platform/mcptool).

// maxDocument bounds a service's OpenAPI document read from its port.
const maxDocument = 32 << 20

// loadTools registers the route tools of those of services not loaded
// yet, and answers the error of the last that could not be.
func (s *Server) loadTools(ctx context.Context, services []string) error {
	if s.sdk == nil {
		// Closed before its first request: nothing is built.
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
			s.sdk.AddTool(rt.MCP, s.routeHandler(rt))
		}
		c.loaded[svc] = true
	}
	return last
}

// readTools reads service's route tools from its OpenAPI document (its
// host's when this process serves it). A tool whose name does not start
// with its service's (process_run of process) is left out: reach and the
// allow-list judge a tool by that prefix.
func (s *Server) readTools(ctx context.Context, service string) ([]*mcptool.Tool, error) {
	var raw []byte
	var err error
	if h := s.o.Deps.Peers.Host(service); h != nil {
		raw, err = h.OpenAPIJSON()
	} else {
		raw, err = s.o.Client.Bytes(ctx, platform.ServiceCall{Method: http.MethodGet, Service: service, Path: "/openapi.json"}, maxDocument)
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
func (s *Server) routeHandler(rt *mcptool.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, err := rt.Prepare(req.Params.Arguments, s.o.Budget)
		if err != nil {
			return Failed(err), nil
		}
		out, err := s.callRoute(ctx, CallerOf(req.Extra), rt, c.Args)
		if err == nil {
			var res *mcp.CallToolResult
			if res, err = rt.Answer(out, c, s.log); err == nil {
				return res, nil
			}
		}
		return Failed(err), nil
	}
}

// callRoute runs rt's operation for who: through the service's host in
// memory when this process serves it, else as the route's request on its
// port (the service binds and checks the arguments either way).
func (s *Server) callRoute(ctx context.Context, who Caller, rt *mcptool.Tool, args map[string]json.RawMessage) (any, error) {
	if h := s.o.Deps.Peers.Host(rt.Route.Service); h != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		return h.CallTool(ctx, rt.MCP.Name, raw)
	}
	return s.o.Client.CallTool(ctx, rt.Route, who.Forward(nil), args)
}

// RunTool runs the route tool name for who with args, as tools/call does,
// and answers the operation's answer as a T (what a composition or a
// resource reads through the same operation).
func RunTool[T any](ctx context.Context, s *Server, who Caller, name string, args map[string]any) (T, error) {
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

// Failed is a tool's failure as the model sees it: the service's code and
// message.
func Failed(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(ToolError(err))
	return &res
}

// ToolError is a tool's failure as an error a tool handler returns (the
// SDK answers it as isError with this text).
func ToolError(err error) error { return errors.New(mcptool.ErrorText(err)) }
