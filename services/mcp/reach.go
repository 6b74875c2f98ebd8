package mcp

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/contract"
	"deckhand/platform/mcptool"
)

// caller is who a message came from.
type caller struct{ contract.Acting }

func callerOf(extra *mcp.RequestExtra) caller {
	var h http.Header
	if extra != nil {
		h = extra.Header
	}
	return caller{contract.ActingOf(h)}
}

// may reports whether the caller may reach service. This service's own
// tools (mcp_*) need nothing beyond the gateway's admission to it.
func (c caller) may(service string) bool { return service == "mcp" || c.May(service) }

// mayResource is may for the service a resource URI reads and MayUse for
// the tool that reads the same thing (resourceOf).
func (c caller) mayResource(uri string) bool {
	svc, tool := resourceOf(uri)
	return c.may(svc) && (tool == "" || c.MayUse(tool))
}

// resourceError is the refusal of a resource the caller may not read, or
// nil when it may.
func (c caller) resourceError(uri string) error {
	svc, tool := resourceOf(uri)
	if !c.may(svc) {
		return forbidden(svc)
	}
	if tool != "" && !c.MayUse(tool) {
		return &jsonrpc.Error{Code: codeForbidden, Message: fmt.Sprintf(
			"FORBIDDEN: reading %s needs the tool %s, which the tool allow-list of the proxy permissions document (mcp_tools) excludes for this credential",
			clipURI(uri), tool)}
	}
	return nil
}

func clipURI(uri string) string {
	if len(uri) > 200 {
		return uri[:200] + "…"
	}
	return uri
}

// codeForbidden is the JSON-RPC error of a refused tool or resource (in
// the range JSON-RPC leaves to servers).
const codeForbidden = -32003

func forbidden(service string) error {
	if service == contract.DesktopReach {
		return &jsonrpc.Error{Code: codeForbidden, Message: fmt.Sprintf(
			"FORBIDDEN: this credential may not drive the %s service (its input is judged as program %s by the proxy permissions; %s only reads the screen)",
			"display", contract.ProgramDesktop, contract.ProgramServices)}
	}
	return &jsonrpc.Error{Code: codeForbidden, Message: fmt.Sprintf(
		"FORBIDDEN: this credential may not reach the %s service (judged as program %s by the proxy permissions)",
		service, contract.ServiceProgram(service))}
}

// notAllowed is the refusal of a tool the caller's allow-list leaves out.
func notAllowed(tool string) error {
	return &jsonrpc.Error{Code: codeForbidden, Message: fmt.Sprintf(
		"FORBIDDEN: this credential may not use the tool %s: the tool allow-list of the proxy permissions document (mcp_tools of the groups that admitted it) excludes it",
		tool)}
}

// guard applies the caller's reach and tool allow-list to every message:
// tools/list and resources/templates/list leave out what it may not reach
// or use (tools/list also the tools of services that do not run, running.go), tools/call and resource reads and subscriptions of it are
// refused; every tool call and its outcome goes to the journal.
func (s *Service) guard(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		who := callerOf(req.GetExtra())
		switch method {
		case "initialize":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				s.subs.opened(ss, who.Header.Get(ownerHeader))
			}
		case "tools/list":
			runs := s.running.runs(ctx)
			_ = s.loadTools(ctx, slices.DeleteFunc(slices.Clone(ActsFor), func(svc string) bool { return !runs(svc) }))
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				r.Tools = slices.DeleteFunc(r.Tools, func(t *mcp.Tool) bool {
					return !who.may(s.toolReach(t.Name)) || !who.MayUse(t.Name) || !runs(toolService(t.Name))
				})
			}
			return res, err
		case "tools/call":
			p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
			if p == nil {
				return next(ctx, method, req)
			}
			svc := toolService(p.Name)
			if svc != "mcp" && !slices.Contains(ActsFor, svc) {
				return next(ctx, method, req) // no such tool: the SDK says so
			}
			start := time.Now()
			var loadErr error
			if svc != "mcp" {
				// What the tool reaches is its route's: its service's
				// tools are loaded first.
				loadErr = s.loadTools(ctx, []string{svc})
			}
			if reach := s.toolReach(p.Name); !who.may(reach) {
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
				return failed(loadErr), nil
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
					return !who.mayResource(t.URITemplate)
				})
			}
			return res, err
		case "resources/list":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListResourcesResult); ok && err == nil {
				r.Resources = slices.DeleteFunc(r.Resources, func(t *mcp.Resource) bool { return !who.mayResource(t.URI) })
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
			if err := who.resourceError(uri); err != nil {
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
func (s *Service) toolReach(name string) string {
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

// toolService is the service a tool calls: the part of its name before
// the first underscore.
func toolService(name string) string {
	svc, _, _ := strings.Cut(name, "_")
	return svc
}

// resourceOf is the service a resource URI reads and the tool that reads
// the same thing: a caller whose allow-list leaves the tool out may not
// read, list or subscribe to the resource either (file:// is files_read,
// process://ID/output process_output, journal:// journal_query). An
// unknown scheme has no tool: the SDK says there is no such resource.
func resourceOf(uri string) (service, tool string) {
	scheme, _, _ := strings.Cut(uri, ":")
	switch scheme {
	case "file":
		return "files", "files_read"
	case "process":
		return "process", "process_output"
	case "journal":
		return "journal", "journal_query"
	}
	return scheme, ""
}

// journalCall records one tool call and its outcome.
func (s *Service) journalCall(who caller, p *mcp.CallToolParamsRaw, svc, outcome, detail string, start time.Time) {
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
	s.deps.Journal.Record(contract.JournalEntry{Time: s.deps.Clock.Now(), Source: "mcp", Level: level,
		Message: "tool " + p.Name + ": " + outcome, Fields: fields})
}
