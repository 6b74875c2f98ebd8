package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/fault"
	"deckhand/services/process"
)

// OutputArgs are process_output's arguments.
type OutputArgs struct {
	ID       string `json:"id" jsonschema:"the process's id"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"byte offset in the process's output (both streams, in order) to read from; pass next_offset of the previous answer"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"characters to answer at most (default: the server's budget)"`
}

// OutputResult is process_output's answer.
type OutputResult struct {
	Text       string `json:"text" jsonschema:"the output from offset, stdout and stderr interleaved as written"`
	NextOffset int64  `json:"next_offset" jsonschema:"pass as offset to read on"`
	Done       bool   `json:"done" jsonschema:"the process has ended and all its output was read"`
	State      string `json:"state"`
	ExitCode   *int   `json:"exit_code"`
	Skipped    int64  `json:"skipped,omitempty" jsonschema:"bytes before the answer's text that were no longer kept"`
}

// StdinArgs are process_stdin's arguments.
type StdinArgs struct {
	ID    string `json:"id" jsonschema:"the process's id (started with keep_stdin_open)"`
	Text  string `json:"text" jsonschema:"text written to its standard input (add \\n for a line)"`
	Close bool   `json:"close,omitempty" jsonschema:"close its standard input afterwards (end of file)"`
}

// Written answers process_stdin.
type Written struct {
	Written int  `json:"written"`
	Closed  bool `json:"closed"`
}

func ptr[T any](v T) *T { return &v }

// textResult is a tool answer whose text content is text (the structured
// content is added by the SDK from the typed output).
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// toolErr is a tool's failure as the model sees it (the SDK answers it
// as is_error with this text): the service's code and message.
func toolErr(err error) error { return errors.New(errorText(err)) }

func (s *Service) addProcessTools() {
	mcp.AddTool(s.server, &mcp.Tool{Name: "process_output", Title: "Read a process's output",
		Description: "Read a process's output (stdout and stderr interleaved as written) from a byte offset, at most max_chars; " +
			"next_offset is where to read on, done says it has ended and everything was read. Does not wait for new output.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, s.processOutput)
	mcp.AddTool(s.server, &mcp.Tool{Name: "process_stdin", Title: "Write to a process's input",
		Description: "Write text to the standard input of a process started with keep_stdin_open; close=true sends end of file.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, s.processStdin)
}

// The process routes that are tools (process_run, process_start,
// process_list, process_signal) read for a model as follows.
func init() {
	views["process_run"] = view{budget: true, args: func(args map[string]json.RawMessage, max int) {
		// max_chars characters are at most 4 bytes each.
		if _, set := args["max_output_bytes"]; !set {
			args["max_output_bytes"] = json.RawMessage(strconv.Itoa(min(4*max, 16<<20)))
		}
	}, answer: answerAs(processRun)}
	views["process_start"] = view{answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, p process.Process, _ int) *mcp.CallToolResult {
		return structuredResult("started process "+p.ID+" ("+p.State+")", p)
	})}
	views["process_signal"] = view{answer: answerAs(func(_ *Service, args map[string]json.RawMessage, p process.Process, _ int) *mcp.CallToolResult {
		return structuredResult("sent "+argString(args, "signal")+" to process "+p.ID, p)
	})}
	views["process_list"] = view{answer: answerAs(func(s *Service, _ map[string]json.RawMessage, l process.ProcessList, _ int) *mcp.CallToolResult {
		var b strings.Builder
		for _, p := range l.Processes {
			fmt.Fprintf(&b, "%s %s %s\n", p.ID, p.State, strings.Join(p.Cmd, " "))
		}
		if l.Processes == nil {
			l.Processes = []process.Process{}
		}
		return structuredResult(trimText(b.String(), 0, s.set.OutputBudget).Text, l)
	})}
}

// structuredResult is a tool answer with text and structured content.
func structuredResult(text string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}
}

// processRun reads a run's answer: stdout and stderr trimmed to max
// characters (in the structured content too), a failure as an error whose
// text says how the command ended.
func processRun(_ *Service, _ map[string]json.RawMessage, r process.RunResult, max int) *mcp.CallToolResult {
	if r.Encoding == "base64" {
		r.Stdout, r.Stderr = "<binary output, base64 in process_output>", ""
	}
	out, errp := trimText(r.Stdout, 0, max), trimText(r.Stderr, 0, max)
	r.Stdout, r.Stderr = out.Text, errp.Text
	r.Truncated = r.Truncated || out.Next > 0 || errp.Next > 0
	text := out.Text
	if r.Truncated {
		text += fmt.Sprintf("\n[the whole output: process_output with id=%s and offset=0]", r.ID)
	}
	if r.State == process.StateFailedToStart {
		res := structuredResult("failed to start: "+r.Error, r)
		res.IsError = true
		return res
	}
	// A model reads the text, not the structured content: a failure says
	// so there, with the exit code and what the command wrote to stderr.
	if errp.Text != "" {
		text = withNewline(text) + "[stderr]\n" + errp.Text
	}
	failed := r.State != process.StateExited || r.ExitCode == nil || *r.ExitCode != 0
	if failed {
		text = withNewline(text) + "[" + endOf(r.State, r.ExitCode) + "]"
	}
	res := structuredResult(text, r)
	res.IsError = failed
	return res
}

// withNewline ends a non-empty text with a line break, so what follows
// starts a line of its own.
func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// endOf says how a run ended, for the text content.
func endOf(state string, code *int) string {
	c := "no exit code"
	if code != nil {
		c = "exit code " + strconv.Itoa(*code)
	}
	switch state {
	case process.StateExited:
		return c
	case process.StateTimedOut:
		return "timed out and stopped, " + c
	case process.StateKilled:
		return "killed by a signal, " + c
	}
	return state + ", " + c
}

func (s *Service) processOutput(ctx context.Context, req *mcp.CallToolRequest, in OutputArgs) (*mcp.CallToolResult, OutputResult, error) {
	if in.ID == "" {
		return nil, OutputResult{}, toolErr(fault.Invalid("id", "is required"))
	}
	max := s.budget(in.MaxChars)
	// max_chars characters are at most 4 bytes each.
	q := url.Values{"since": {strconv.FormatInt(in.Offset, 10)}, "max_bytes": {strconv.Itoa(min(4*max, 16<<20))}}
	var pg process.OutputPage
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "process",
		path: "/api/v1/process/" + url.PathEscape(in.ID) + "/output", query: q}, &pg); err != nil {
		return nil, OutputResult{}, toolErr(err)
	}
	var b strings.Builder
	next := pg.NextOffset
	for _, c := range pg.Chunks {
		data := c.Data
		if c.Encoding == "base64" {
			data = "<" + strconv.Itoa(len(c.Data)*3/4) + " bytes of binary output>"
		}
		if b.Len()+len(data) > 4*max || (b.Len() > 0 && len([]rune(b.String()+data)) > max) {
			next = c.Offset // read on from the first chunk left out
			break
		}
		b.WriteString(data)
	}
	o := OutputResult{Text: b.String(), NextOffset: next, Done: pg.Done && next == pg.NextOffset,
		State: pg.Process.State, ExitCode: pg.Process.ExitCode}
	if pg.Gap != nil {
		o.Skipped = pg.Gap.To - pg.Gap.From
	}
	text := o.Text
	if !o.Done && next != in.Offset {
		text += fmt.Sprintf("\n[output continues: call process_output with offset=%d]", next)
	}
	return textResult(text), o, nil
}

func (s *Service) processStdin(ctx context.Context, req *mcp.CallToolRequest, in StdinArgs) (*mcp.CallToolResult, Written, error) {
	who := callerOf(req.Extra)
	base := "/api/v1/process/" + url.PathEscape(in.ID) + "/stdin"
	var w struct {
		Written int `json:"written"`
	}
	if in.Text != "" {
		if err := s.be.json(ctx, who, call{method: http.MethodPost, service: "process", path: base,
			body: process.StdinInput{Data: in.Text}}, &w); err != nil {
			return nil, Written{}, toolErr(err)
		}
	}
	if in.Close {
		if err := s.be.json(ctx, who, call{method: http.MethodPost, service: "process", path: base + "/close"}, nil); err != nil {
			return nil, Written{Written: w.Written}, toolErr(err)
		}
	}
	return textResult(fmt.Sprintf("wrote %d bytes", w.Written)), Written{Written: w.Written, Closed: in.Close}, nil
}
