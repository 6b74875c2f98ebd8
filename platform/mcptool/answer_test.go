package mcptool

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
)

// TestAnswerReadsTheFace: each part of a route's face changes how its
// answer reads, and a call's arguments are taken apart as it says.
func TestAnswerReadsTheFace(t *testing.T) {
	t.Parallel()
	tool := func(f Face) *Tool {
		if f.Text != "" {
			f.text, _ = platform.ParseToolText("t", f.Text)
		}
		if f.Failed != "" {
			f.failed, _ = platform.ParseToolText("t", f.Failed)
		}
		return &Tool{MCP: &mcp.Tool{Name: "t"}, Face: f}
	}
	long := strings.Repeat("ab", 50)
	for _, c := range []struct {
		name      string
		face      Face
		args      string
		out       any
		text      string // the text content's start
		structure string // a part of the structured content
		image     bool
		failed    bool
		wantArgs  string // the operation's arguments, as JSON
		err       string
	}{
		{name: "JSON", out: map[string]any{"a": 1}, text: `{"a":1}`, structure: `"a":1`, wantArgs: `{}`},
		{name: "text", face: Face{Text: "a is {{.a}}"}, out: map[string]any{"a": 1}, text: "a is 1", wantArgs: `{}`},
		{name: "budget cut by the tool", face: Face{Text: "{{.s}}", Budget: "tool"}, args: `{"max_chars":10}`,
			out: map[string]any{"s": long}, text: long[:10] + "\n[trimmed", wantArgs: `{}`},
		{name: "budget given to the operation", face: Face{Text: "{{.s}}", Budget: "operation"}, args: `{"max_chars":10}`,
			out: map[string]any{"s": long}, text: long, wantArgs: `{"max_chars":10}`},
		{name: "pages", face: Face{Pages: "s"}, args: `{"max_chars":10,"offset":90,"path":"/x"}`,
			out: map[string]any{"s": long}, text: long[90:], structure: `"total_chars":100`, wantArgs: `{"path":"/x"}`},
		{name: "a page's marker", face: Face{Pages: "s"}, args: `{"max_chars":10,"offset":20}`,
			out: map[string]any{"s": long}, text: long[20:30] + "\n[trimmed", structure: `"next_offset":30`, wantArgs: `{}`},
		{name: "image", face: Face{Image: "image", Text: "{{.width}} wide"}, out: map[string]any{"image": []byte("png"), "width": 3},
			text: "3 wide", image: true, structure: `"width":3`, wantArgs: `{}`},
		{name: "a failure", face: Face{Text: "{{line .out}}[exit {{.code}}]", Failed: `{{if ne .code 0}}x{{end}}`},
			out: map[string]any{"out": "no", "code": 3}, text: "no\n[exit 3]", failed: true, wantArgs: `{}`},
		{name: "no failure", face: Face{Text: "{{line .out}}", Failed: `{{if ne .code 0}}x{{end}}`},
			out: map[string]any{"out": "", "code": 0}, text: "", wantArgs: `{}`},
		{name: "not an image", face: Face{Image: "data"}, out: map[string]any{"data": []byte{0}, "mime_type": "application/zip"},
			wantArgs: `{}`, err: "UNSUPPORTED_MEDIA"},
		{name: "a bad offset", face: Face{Pages: "s"}, args: `{"offset":-1}`, err: "offset"},
		{name: "bad arguments", args: `[1]`, err: "arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tl := tool(c.face)
			call, err := tl.Prepare(json.RawMessage(c.args), 1000)
			var res *mcp.CallToolResult
			if err == nil {
				if got, _ := json.Marshal(call.Args); string(got) != c.wantArgs {
					t.Fatalf("the operation's arguments %s, want %s", got, c.wantArgs)
				}
				res, err = tl.Answer(c.out, call, slog.New(slog.DiscardHandler))
			}
			if c.err != "" {
				if err == nil || !strings.Contains(ErrorText(err), c.err) {
					t.Fatalf("err %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var text string
			image := false
			for _, ct := range res.Content {
				switch x := ct.(type) {
				case *mcp.TextContent:
					text = x.Text
				case *mcp.ImageContent:
					image = string(x.Data) == "png" && x.MIMEType == "image/png"
				}
			}
			structured, _ := json.Marshal(res.StructuredContent)
			if !strings.HasPrefix(text, c.text) || image != c.image || res.IsError != c.failed || !strings.Contains(string(structured), c.structure) ||
				(c.image && strings.Contains(string(structured), `"image"`)) {
				t.Fatalf("text %q, image %v, structured %s", text, image, structured)
			}
		})
	}
}
