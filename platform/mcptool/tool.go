package mcptool

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
)

// Tool is one operation of a service offered as an MCP tool.
type Tool struct {
	Route *platform.RouteTool
	// MCP is the tool as tools/list shows it.
	MCP  *mcp.Tool
	Face Face
}

// Face is how a route tool reads for a model, as its x-mcp-tool says
// (platform.Tool).
type Face struct {
	Text   string             `json:"x-text"`
	Budget string             `json:"x-budget"` // "tool", "operation" or ""
	Pages  string             `json:"x-pages"`
	Image  string             `json:"x-image"`
	Failed string             `json:"x-failed"`
	text   *platform.ToolText // nil: the answer's JSON
	failed *platform.ToolText // nil: no answer is a failure
}

// Read reads the route tools of service from its OpenAPI document. A
// tool whose face does not read is answered with its text as JSON, and
// said in warnings.
func Read(service string, openapiJSON []byte) (tools []*Tool, warnings []error, err error) {
	routes, err := platform.ReadTools(service, openapiJSON)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range routes {
		t := &Tool{Route: r, MCP: &mcp.Tool{}}
		if err := json.Unmarshal(r.Doc, t.MCP); err != nil {
			warnings = append(warnings, fmt.Errorf("tool %s: %w", r.Name, err))
			continue
		}
		_ = json.Unmarshal(r.Doc, &t.Face)
		if t.Face.Text != "" {
			if t.Face.text, err = platform.ParseToolText(t.MCP.Name, t.Face.Text); err != nil {
				warnings = append(warnings, fmt.Errorf("tool %s: its x-text does not parse, its answers read as JSON: %w", r.Name, err))
			}
		}
		if t.Face.Failed != "" {
			if t.Face.failed, err = platform.ParseToolText(t.MCP.Name, t.Face.Failed); err != nil {
				warnings = append(warnings, fmt.Errorf("tool %s: its x-failed does not parse, no answer is a failure: %w", r.Name, err))
			}
		}
		tools = append(tools, t)
	}
	return tools, warnings, nil
}
