package mcpserver

import (
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/contract"
)

// Caller is who a message came from.
type Caller struct{ contract.Acting }

// CallerOf is the caller of a message, from its request's headers.
func CallerOf(extra *mcp.RequestExtra) Caller {
	var h http.Header
	if extra != nil {
		h = extra.Header
	}
	return Caller{contract.ActingOf(h)}
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
