package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/contract"
	"deckhand/platform/mcptool"
)

// may reports whether the caller may reach service. The server's own
// tools need nothing beyond the gateway's admission to it.
func (s *Server) may(c Caller, service string) bool { return service == s.o.Own || c.May(service) }

// resourceError is the refusal of a resource the caller may not read
// (its service's reach, and the tool that reads the same thing), or nil
// when it may.
func (s *Server) resourceError(c Caller, uri string) error {
	svc, tool := s.resourceOf(uri)
	if !s.may(c, svc) {
		return forbidden(svc)
	}
	if tool != "" && !c.MayUse(tool) {
		if len(uri) > 200 {
			uri = uri[:200] + "…"
		}
		return &jsonrpc.Error{Code: codeForbidden, Message: fmt.Sprintf(
			"FORBIDDEN: reading %s needs the tool %s, which the tool allow-list of the proxy permissions document (mcp_tools) excludes for this credential",
			uri, tool)}
	}
	return nil
}

func (s *Server) resourceOf(uri string) (service, tool string) {
	if s.o.ResourceOf == nil {
		scheme, _, _ := strings.Cut(uri, ":")
		return scheme, ""
	}
	return s.o.ResourceOf(uri)
}

// guard applies the caller's reach and tool allow-list to every message:
// tools/list and resources/templates/list leave out what it may not reach
// or use (tools/list also the tools of services that do not run,
// running.go), tools/call and resource reads and subscriptions of it are
// refused; every tool call and its outcome goes to the journal.
func (s *Server) guard(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		who := CallerOf(req.GetExtra())
		switch method {
		case "initialize":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				s.owners.opened(ss, who.Header.Get(ownerHeader))
			}
		case "tools/list":
			runs := s.running.runs(ctx, s.o.Own)
			_ = s.loadTools(ctx, slices.DeleteFunc(slices.Clone(s.o.ActsFor), func(svc string) bool { return !runs(svc) }))
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				r.Tools = slices.DeleteFunc(r.Tools, func(t *mcp.Tool) bool {
					return !s.may(who, s.toolReach(t.Name)) || !who.MayUse(t.Name) || !runs(toolService(t.Name))
				})
			}
			return res, err
		case "tools/call":
			p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
			if p == nil {
				return next(ctx, method, req)
			}
			svc := toolService(p.Name)
			if svc != s.o.Own && !slices.Contains(s.o.ActsFor, svc) {
				return next(ctx, method, req) // no such tool: the SDK says so
			}
			start := time.Now()
			var loadErr error
			if svc != s.o.Own {
				// What the tool reaches is its route's: its service's
				// tools are loaded first.
				loadErr = s.loadTools(ctx, []string{svc})
			}
			if reach := s.toolReach(p.Name); !s.may(who, reach) {
				err := forbidden(reach)
				s.journalCall(who, p, svc, "refused", err.Error(), start)
				return nil, err
			}
			if !who.MayUse(p.Name) {
				err := notAllowed(p.Name)
				s.journalCall(who, p, svc, "refused", err.Error(), start)
				return nil, err
			}
			if loadErr != nil && s.catalog.tool(p.Name) == nil {
				// Its service's tools are not known: it does not answer.
				s.journalCall(who, p, svc, "failed", mcptool.ErrorText(loadErr), start)
				return Failed(loadErr), nil
			}
			res, err := next(ctx, method, req)
			outcome, detail := "ok", ""
			if err != nil {
				outcome, detail = "error", err.Error()
			} else if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
				outcome = "failed"
				if len(r.Content) > 0 {
					if t, ok := r.Content[0].(*mcp.TextContent); ok {
						detail = t.Text
					}
				}
			}
			s.journalCall(who, p, svc, outcome, detail, start)
			return res, err
		case "resources/templates/list":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListResourceTemplatesResult); ok && err == nil {
				r.ResourceTemplates = slices.DeleteFunc(r.ResourceTemplates, func(t *mcp.ResourceTemplate) bool {
					return s.resourceError(who, t.URITemplate) != nil
				})
			}
			return res, err
		case "resources/list":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListResourcesResult); ok && err == nil {
				r.Resources = slices.DeleteFunc(r.Resources, func(t *mcp.Resource) bool { return s.resourceError(who, t.URI) != nil })
			}
			return res, err
		case "resources/read", "resources/subscribe", "resources/unsubscribe":
			var uri string
			switch p := req.GetParams().(type) {
			case *mcp.ReadResourceParams:
				uri = p.URI
			case *mcp.SubscribeParams:
				uri = p.URI
			case *mcp.UnsubscribeParams:
				uri = p.URI
			}
			if err := s.resourceError(who, uri); err != nil {
				return nil, err
			}
		}
		return next(ctx, method, req)
	}
}

// toolReach is what a tool needs in the caller's reach: the program
// proxy permissions judge its route as, where that is not its service's
// (contract.RouteProgram: a display route that types, clicks or acts on an
// element is contract.DesktopReach), else its service. A tool of such a
// service that is no route known is taken to act.
func (s *Server) toolReach(name string) string {
	svc := toolService(name)
	if !contract.HasDesktopInput(svc) {
		return svc
	}
	if rt := s.catalog.tool(name); rt != nil {
		method, path := rt.Route.Request()
		if contract.RouteProgram(svc, method, path, nil) != contract.ProgramDesktop {
			return svc
		}
	}
	return contract.DesktopReach
}

// journalCall records one tool call and its outcome.
func (s *Server) journalCall(who Caller, p *mcp.CallToolParamsRaw, svc, outcome, detail string, start time.Time) {
	fields := who.Fields()
	fields["tool"] = p.Name
	fields["service"] = svc
	fields["outcome"] = outcome
	fields["duration_ms"] = time.Since(start).Milliseconds()
	if a := mcptool.Summarize(p.Arguments); a != nil {
		fields["arguments"] = a
	}
	if detail != "" {
		if len(detail) > 300 {
			detail = detail[:300] + "…"
		}
		fields["error"] = detail
	}
	level := "info"
	if outcome != "ok" {
		level = "warn"
	}
	s.o.Deps.Journal.Record(contract.JournalEntry{Time: s.o.Deps.Clock.Now(), Source: s.o.Own, Level: level,
		Message: "tool " + p.Name + ": " + outcome, Fields: fields})
}
