package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/fault"
	"deckhand/services/files"
)

// maxRead bounds what files_read and file resources read of one file.
const maxRead = 32 << 20

// FileEntry is one file as the tools answer it.
type FileEntry struct {
	Path     string `json:"path"`
	Type     string `json:"type" jsonschema:"file, dir, symlink or other"`
	Size     int64  `json:"size"`
	Mode     string `json:"mode" jsonschema:"permission bits in octal"`
	Modified string `json:"modified" jsonschema:"RFC 3339 time"`
	Target   string `json:"symlink_target,omitempty"`
}

func entry(e files.Entry) FileEntry {
	return FileEntry{Path: e.Path, Type: e.Type, Size: e.Size, Mode: e.Mode, Modified: e.Modified.UTC().Format(time.RFC3339), Target: e.Target}
}

// ReadArgs are files_read's arguments.
type ReadArgs struct {
	Path     string `json:"path" jsonschema:"absolute path of the file"`
	Offset   int    `json:"offset,omitempty" jsonschema:"character to start at (from a trimmed answer's marker)"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"characters to answer at most (default: the server's budget)"`
}

// ReadResult is files_read's structured answer for text.
type ReadResult struct {
	Path       string `json:"path"`
	Text       string `json:"text,omitempty"`
	MimeType   string `json:"mime_type"`
	Size       int64  `json:"size" jsonschema:"bytes"`
	TotalChars int    `json:"total_chars,omitempty"`
	NextOffset int    `json:"next_offset,omitempty" jsonschema:"where to read on; absent when the answer reaches the end"`
}

// WriteArgs are files_write's arguments.
type WriteArgs struct {
	Path    string `json:"path" jsonschema:"absolute path of the file; missing parent directories are created"`
	Content string `json:"content" jsonschema:"the whole new content (text)"`
}

// EditArgs are files_edit's arguments.
type EditArgs struct {
	Path       string `json:"path" jsonschema:"absolute path of the file"`
	OldString  string `json:"old_string" jsonschema:"exact text to replace; it must occur exactly once unless replace_all"`
	NewString  string `json:"new_string" jsonschema:"the text to put instead"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence"`
}

// EditResult answers files_edit.
type EditResult struct {
	Entry        FileEntry `json:"entry"`
	Replacements int       `json:"replacements"`
}

// ListFilesArgs are files_list's arguments.
type ListFilesArgs struct {
	Path   string `json:"path" jsonschema:"absolute path of a directory"`
	Depth  int    `json:"depth,omitempty" jsonschema:"levels to descend (default 1: the directory's own entries)"`
	Hidden bool   `json:"hidden,omitempty" jsonschema:"include names starting with a dot"`
}

// ListFilesResult answers files_list.
type ListFilesResult struct {
	Path      string      `json:"path"`
	Entries   []FileEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

func (s *Service) addFilesTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	mcp.AddTool(s.server, &mcp.Tool{Name: "files_read", Title: "Read a file",
		Description: "Read a file of the container. Text is answered from offset, at most max_chars characters, with a marker " +
			"saying where to read on; an image (PNG, JPEG, GIF, WebP) is answered as image content.",
		Annotations: ro}, s.filesRead)
	mcp.AddTool(s.server, &mcp.Tool{Name: "files_write", Title: "Write a file",
		Description: "Create or replace a whole file with content (text). Missing parent directories are created; readers " +
			"never see half a file. To change part of a file use files_edit.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}}, s.filesWrite)
	mcp.AddTool(s.server, &mcp.Tool{Name: "files_edit", Title: "Edit a file by exact replacement",
		Description: "Replace old_string with new_string in a file. old_string must match exactly (whitespace included) and " +
			"occur once, unless replace_all. The write fails, changing nothing, if the file changed since it was read.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, s.filesEdit)
	mcp.AddTool(s.server, &mcp.Tool{Name: "files_list", Title: "List a directory",
		Description: "List a directory's entries (name, type, size, mode, modified), sorted; depth > 1 descends.",
		Annotations: ro}, s.filesList)
}

func pathQuery(path string) url.Values { return url.Values{"path": {path}} }

// readFile reads a whole file (at most maxRead bytes) with its type and ETag.
func (s *Service) readFile(ctx context.Context, who caller, path string) ([]byte, string, string, error) {
	raw, h, err := s.be.bytes(ctx, who, call{method: http.MethodGet, service: "files", path: "/api/v1/files/content", query: pathQuery(path)}, maxRead)
	if err != nil {
		return nil, "", "", err
	}
	ct, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return raw, strings.TrimSpace(ct), h.Get("ETag"), nil
}

func isImage(ct string) bool {
	switch ct {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

func (s *Service) filesRead(ctx context.Context, req *mcp.CallToolRequest, in ReadArgs) (*mcp.CallToolResult, ReadResult, error) {
	raw, ct, _, err := s.readFile(ctx, callerOf(req.Extra), in.Path)
	if err != nil {
		return nil, ReadResult{}, toolErr(err)
	}
	out := ReadResult{Path: in.Path, MimeType: ct, Size: int64(len(raw))}
	if isImage(ct) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: raw, MIMEType: ct}}}, out, nil
	}
	if !utf8.Valid(raw) {
		return nil, ReadResult{}, toolErr(&fault.Error{Code: fault.CodeUnsupportedMedia, Details: "path",
			Message: fmt.Sprintf("%s is %d bytes of binary data (%s), not text", in.Path, len(raw), ct)})
	}
	pg := trimText(string(raw), in.Offset, s.budget(in.MaxChars))
	out.Text, out.TotalChars, out.NextOffset = pg.Text, pg.Total, pg.Next
	return textResult(pg.Text), out, nil
}

// put writes content to path, only over etag when one is given.
func (s *Service) put(ctx context.Context, who caller, path string, content []byte, etag string) (files.Entry, error) {
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	if etag != "" {
		h.Set("If-Match", etag)
	}
	var e files.Entry
	err := s.be.json(ctx, who, call{method: http.MethodPut, service: "files", path: "/api/v1/files/content",
		query: pathQuery(path), body: bytes.NewReader(content), header: h}, &e)
	return e, err
}

func (s *Service) filesWrite(ctx context.Context, req *mcp.CallToolRequest, in WriteArgs) (*mcp.CallToolResult, FileEntry, error) {
	e, err := s.put(ctx, callerOf(req.Extra), in.Path, []byte(in.Content), "")
	if err != nil {
		return nil, FileEntry{}, toolErr(err)
	}
	return textResult(fmt.Sprintf("wrote %d bytes to %s", e.Size, e.Path)), entry(e), nil
}

func (s *Service) filesEdit(ctx context.Context, req *mcp.CallToolRequest, in EditArgs) (*mcp.CallToolResult, EditResult, error) {
	if in.OldString == "" {
		return nil, EditResult{}, toolErr(fault.Invalid("old_string", "must not be empty"))
	}
	who := callerOf(req.Extra)
	raw, _, etag, err := s.readFile(ctx, who, in.Path)
	if err != nil {
		return nil, EditResult{}, toolErr(err)
	}
	text := string(raw)
	n := strings.Count(text, in.OldString)
	switch {
	case n == 0:
		return nil, EditResult{}, toolErr(fault.Invalid("old_string", "does not occur in %s (it must match exactly, whitespace included)", in.Path))
	case n > 1 && !in.ReplaceAll:
		return nil, EditResult{}, toolErr(fault.Invalid("old_string", "occurs %d times in %s: give more context to make it unique, or replace_all", n, in.Path))
	}
	if !in.ReplaceAll {
		text = strings.Replace(text, in.OldString, in.NewString, 1)
		n = 1
	} else {
		text = strings.ReplaceAll(text, in.OldString, in.NewString)
	}
	e, err := s.put(ctx, who, in.Path, []byte(text), etag)
	if err != nil {
		return nil, EditResult{}, toolErr(err)
	}
	return textResult(fmt.Sprintf("replaced %d occurrence(s) in %s", n, in.Path)), EditResult{Entry: entry(e), Replacements: n}, nil
}

func (s *Service) filesList(ctx context.Context, req *mcp.CallToolRequest, in ListFilesArgs) (*mcp.CallToolResult, ListFilesResult, error) {
	q := pathQuery(in.Path)
	if in.Depth > 0 {
		q.Set("depth", strconv.Itoa(in.Depth))
	}
	if in.Hidden {
		q.Set("hidden", "true")
	}
	var l files.Listing
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "files", path: "/api/v1/files", query: q}, &l); err != nil {
		return nil, ListFilesResult{}, toolErr(err)
	}
	out := ListFilesResult{Path: l.Path, Entries: []FileEntry{}, Truncated: l.Truncated}
	var b strings.Builder
	for _, e := range l.Entries {
		out.Entries = append(out.Entries, entry(e))
		name := e.Path
		if e.Type == "dir" {
			name += "/"
		}
		fmt.Fprintf(&b, "%s %s %d\n", e.Mode, name, e.Size)
	}
	return textResult(trimText(b.String(), 0, s.set.OutputBudget).Text), out, nil
}

// The files routes that are tools (files_stat, files_search, files_move,
// files_delete) read for a model as follows.
func init() {
	views["files_stat"] = view{answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, e files.Entry, _ int) *mcp.CallToolResult {
		return structuredResult(fmt.Sprintf("%s: %s, %d bytes, mode %s", e.Path, e.Type, e.Size, e.Mode), e)
	})}
	views["files_move"] = view{answer: answerAs(func(_ *Service, args map[string]json.RawMessage, e files.Entry, _ int) *mcp.CallToolResult {
		return structuredResult("moved "+argString(args, "from")+" to "+e.Path, e)
	})}
	views["files_delete"] = view{answer: func(_ *Service, args map[string]json.RawMessage, _ any, _ int) (*mcp.CallToolResult, error) {
		return structuredResult("deleted "+argString(args, "path"), struct{}{}), nil
	}}
	views["files_search"] = view{answer: answerAs(func(s *Service, _ map[string]json.RawMessage, r files.SearchResult, _ int) *mcp.CallToolResult {
		var b strings.Builder
		for _, m := range r.Matches {
			if m.Line > 0 {
				fmt.Fprintf(&b, "%s:%d: %s\n", m.Path, m.Line, m.Text)
			} else {
				fmt.Fprintln(&b, m.Path)
			}
		}
		if r.Matches == nil {
			r.Matches = []files.Match{}
		}
		return structuredResult(trimText(b.String(), 0, s.set.OutputBudget).Text, r)
	})}
}
