package mcptool

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/fault"
)

// Answer reads out, the answer of t's operation to c, as t's face says:
// its image member as image content; its paged member as the window of
// at most c.Max characters from c.Offset, with next_offset and
// total_chars; its text (x-text over the answer, else the window, else the
// answer's JSON) cut to c.Max unless the operation applied the budget
// itself; a failure (isError) when x-failed reads anything. The structured
// content is the answer less its image. A text template that fails on the
// answer is logged, and the answer reads as JSON.
func (t *Tool) Answer(out any, c Call, log *slog.Logger) (*mcp.CallToolResult, error) {
	f := t.Face
	raw, isRaw := out.(json.RawMessage)
	var err error
	if !isRaw {
		if raw, err = json.Marshal(out); err != nil {
			return nil, err
		}
	}
	if string(raw) == "null" {
		raw = []byte("{}")
	}
	var content []mcp.Content
	var window *Page
	if f.Image != "" || f.Pages != "" {
		var img []byte
		img, raw = cutImage(raw, f.Image)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		if f.Image != "" {
			if img == nil {
				_ = json.Unmarshal(m[f.Image], &img)
			}
			delete(m, f.Image)
		}
		if img != nil {
			mime := "image/png"
			_ = json.Unmarshal(m["mime_type"], &mime)
			if !ModelImage(mime) {
				return nil, &fault.Error{Code: fault.CodeUnsupportedMedia, Details: f.Image,
					Message: fmt.Sprintf("the answer is %d bytes of binary data (%s), neither text nor an image", len(img), mime)}
			}
			content = append(content, &mcp.ImageContent{Data: img, MIMEType: mime})
		}
		if f.Pages != "" {
			var text string
			_ = json.Unmarshal(m[f.Pages], &text)
			pg := Trim(text, c.Offset, c.Max)
			window = &pg
			m[f.Pages], _ = json.Marshal(pg.Text)
			m["next_offset"], m["total_chars"] = json.RawMessage(strconv.Itoa(pg.Next)), json.RawMessage(strconv.Itoa(pg.Total))
		}
		if raw, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	text := string(raw)
	switch {
	case f.text != nil:
		if rendered, err := f.text.Render(raw, c.Args); err == nil {
			text = rendered
		} else {
			log.Warn("a tool's x-text failed on its answer: it reads as JSON", "tool", t.MCP.Name, "err", err)
		}
	case window != nil:
		text = window.Text
	}
	if f.Budget != "operation" && (f.text != nil || f.Budget == "tool") {
		text = Trim(text, 0, c.Max).Text
	}
	if text != "" || len(content) == 0 {
		content = append(content, &mcp.TextContent{Text: text})
	}
	res := &mcp.CallToolResult{Content: content, StructuredContent: json.RawMessage(raw)}
	if f.failed != nil {
		failed, err := f.failed.Render(raw, c.Args)
		if err != nil {
			log.Warn("a tool's x-failed failed on its answer: it reads as no failure", "tool", t.MCP.Name, "err", err)
		}
		res.IsError = failed != ""
	}
	return res, nil
}

// As is an operation's answer as a T: itself when the host answered it in
// memory, else decoded from its JSON.
func As[T any](out any) (T, error) {
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

// ModelImage reports whether a type is an image a model can look at.
func ModelImage(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// cutImage takes an answer's leading member named member out without
// reading it as JSON (the decoder's scanner is the slowest part of a
// screenshot's trip): base64 has no quote and needs no escape, so the
// member ends at the next quote. It answers the image and the rest of the
// object, or no image and raw as it was when the answer does not start so.
func cutImage(raw []byte, member string) ([]byte, []byte) {
	if member == "" {
		return nil, raw
	}
	rest, ok := bytes.CutPrefix(raw, []byte(`{"`+member+`":"`))
	end := bytes.IndexByte(rest, '"')
	if !ok || end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, raw
	}
	img := make([]byte, base64.StdEncoding.DecodedLen(end))
	n, err := base64.StdEncoding.Decode(img, rest[:end])
	if err != nil {
		return nil, raw
	}
	rest = bytes.TrimPrefix(bytes.TrimLeft(rest[end+1:], " \t\r\n"), []byte(","))
	return img[:n], append([]byte{'{'}, rest...)
}
