package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/fault"
	"deckhand/platform/mcpserver"
)

// EditArgs are files_edit's arguments.
type EditArgs struct {
	Path       string `json:"path" jsonschema:"absolute path of the file"`
	OldString  string `json:"old_string" jsonschema:"exact text to replace; it must occur exactly once unless replace_all"`
	NewString  string `json:"new_string" jsonschema:"the text to put instead"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence"`
}

// EditResult answers files_edit.
type EditResult struct {
	Entry        map[string]any `json:"entry" jsonschema:"the file's entry after the write, as files_stat answers it"`
	Replacements int            `json:"replacements"`
}

// fileText is what files_read answers: a file's text, else its bytes.
type fileText struct {
	Path     string `json:"path"`
	MimeType string `json:"mime_type"`
	Size     int64  `json:"size"`
	ETag     string `json:"etag"`
	Text     string `json:"text"`
	Data     []byte `json:"data"`
}

// Pong answers mcp_ping.
type Pong struct {
	Pong bool `json:"pong"`
}

// add adds the tools that are no route and the resources.
func (s *Service) add(srv *mcpserver.Server) {
	mcp.AddTool(srv.SDK(), &mcp.Tool{Name: "mcp_ping", Title: "Check the connection",
		Description: "Does nothing and answers pong: a check that this server answers.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, Pong, error) {
			return textResult("pong"), Pong{Pong: true}, nil
		})
	mcp.AddTool(srv.SDK(), &mcp.Tool{Name: "files_edit", Title: "Edit a file by exact replacement",
		Description: "Replace old_string with new_string in a file. old_string must match exactly (whitespace included) and " +
			"occur once, unless replace_all. The write fails, changing nothing, if the file changed since it was read.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}}, s.filesEdit)
	s.addResources(srv.SDK())
}

// textResult is a tool answer whose text content is text (the structured
// content is added by the SDK from the typed output).
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (s *Service) filesEdit(ctx context.Context, req *mcp.CallToolRequest, in EditArgs) (*mcp.CallToolResult, EditResult, error) {
	if in.OldString == "" {
		return nil, EditResult{}, mcpserver.ToolError(fault.Invalid("old_string", "must not be empty"))
	}
	who := mcpserver.CallerOf(req.Extra)
	f, err := mcpserver.RunTool[fileText](ctx, s.srv, who, "files_read", map[string]any{"path": in.Path})
	if err == nil && f.Data != nil {
		err = notText(f)
	}
	if err != nil {
		return nil, EditResult{}, mcpserver.ToolError(err)
	}
	n := strings.Count(f.Text, in.OldString)
	switch {
	case n == 0:
		return nil, EditResult{}, mcpserver.ToolError(fault.Invalid("old_string", "does not occur in %s (it must match exactly, whitespace included)", in.Path))
	case n > 1 && !in.ReplaceAll:
		return nil, EditResult{}, mcpserver.ToolError(fault.Invalid("old_string", "occurs %d times in %s: give more context to make it unique, or replace_all", n, in.Path))
	case in.ReplaceAll:
		f.Text = strings.ReplaceAll(f.Text, in.OldString, in.NewString)
	default:
		f.Text, n = strings.Replace(f.Text, in.OldString, in.NewString, 1), 1
	}
	e, err := mcpserver.RunTool[map[string]any](ctx, s.srv, who, "files_write", map[string]any{"path": in.Path, "content": f.Text, "if_match": f.ETag})
	if err != nil {
		return nil, EditResult{}, mcpserver.ToolError(err)
	}
	return textResult(fmt.Sprintf("replaced %d occurrence(s) in %s", n, in.Path)), EditResult{Entry: e, Replacements: n}, nil
}

// notText is files_read's refusal of bytes that are neither text nor an
// image.
func notText(f fileText) error {
	return &fault.Error{Code: fault.CodeUnsupportedMedia, Details: "path",
		Message: fmt.Sprintf("%s is %d bytes of binary data (%s), not text", f.Path, f.Size, f.MimeType)}
}
