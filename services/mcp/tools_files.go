package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/fault"
	"deckhand/services/files"
)

// maxRead bounds what files_read and file resources read of one file.
const maxRead = 32 << 20

// EditArgs are files_edit's arguments.
type EditArgs struct {
	Path       string `json:"path" jsonschema:"absolute path of the file"`
	OldString  string `json:"old_string" jsonschema:"exact text to replace; it must occur exactly once unless replace_all"`
	NewString  string `json:"new_string" jsonschema:"the text to put instead"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence"`
}

// EditResult answers files_edit.
type EditResult struct {
	Entry        files.Entry `json:"entry"`
	Replacements int         `json:"replacements"`
}

func (s *Service) addFilesTools() {
	mcp.AddTool(s.server, &mcp.Tool{Name: "files_edit", Title: "Edit a file by exact replacement",
		Description: "Replace old_string with new_string in a file. old_string must match exactly (whitespace included) and " +
			"occur once, unless replace_all. The write fails, changing nothing, if the file changed since it was read.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, s.filesEdit)
}

func (s *Service) filesEdit(ctx context.Context, req *mcp.CallToolRequest, in EditArgs) (*mcp.CallToolResult, EditResult, error) {
	if in.OldString == "" {
		return nil, EditResult{}, toolErr(fault.Invalid("old_string", "must not be empty"))
	}
	who := callerOf(req.Extra)
	f, err := runTool[files.Text](ctx, s, who, "files_read", map[string]any{"path": in.Path})
	if err == nil && f.Data != nil {
		err = notText(f)
	}
	if err != nil {
		return nil, EditResult{}, toolErr(err)
	}
	n := strings.Count(f.Text, in.OldString)
	switch {
	case n == 0:
		return nil, EditResult{}, toolErr(fault.Invalid("old_string", "does not occur in %s (it must match exactly, whitespace included)", in.Path))
	case n > 1 && !in.ReplaceAll:
		return nil, EditResult{}, toolErr(fault.Invalid("old_string", "occurs %d times in %s: give more context to make it unique, or replace_all", n, in.Path))
	case in.ReplaceAll:
		f.Text = strings.ReplaceAll(f.Text, in.OldString, in.NewString)
	default:
		f.Text, n = strings.Replace(f.Text, in.OldString, in.NewString, 1), 1
	}
	e, err := runTool[files.Entry](ctx, s, who, "files_write", map[string]any{"path": in.Path, "content": f.Text, "if_match": f.ETag})
	if err != nil {
		return nil, EditResult{}, toolErr(err)
	}
	return textResult(fmt.Sprintf("replaced %d occurrence(s) in %s", n, in.Path)), EditResult{Entry: e, Replacements: n}, nil
}

// notText is files_read's refusal of bytes that are neither text nor an
// image.
func notText(f files.Text) error {
	return &fault.Error{Code: fault.CodeUnsupportedMedia, Details: "path",
		Message: fmt.Sprintf("%s is %d bytes of binary data (%s), not text", f.Path, f.Size, f.MimeType)}
}

// files_read reads for a model as its text from offset, trimmed, or as
// image content; the other files tools by their routes' Text.
func init() {
	views["files_read"] = view{budget: true, offset: true, answer: func(_ *Service, args map[string]json.RawMessage, out any, max int) (*mcp.CallToolResult, error) {
		f, err := as[files.Text](out)
		switch {
		case err != nil:
			return nil, err
		case f.Data != nil && files.IsImage(f.MimeType):
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: f.Data, MIMEType: f.MimeType}},
				StructuredContent: map[string]any{"path": f.Path, "mime_type": f.MimeType, "size": f.Size, "etag": f.ETag}}, nil
		case f.Data != nil:
			return nil, notText(f)
		}
		pg := trimText(f.Text, argInt(args, "offset"), max)
		return structuredResult(pg.Text, map[string]any{"path": f.Path, "text": pg.Text, "mime_type": f.MimeType,
			"size": f.Size, "etag": f.ETag, "total_chars": pg.Total, "next_offset": pg.Next}), nil
	}}
}
