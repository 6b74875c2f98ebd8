package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/services/process"
)

func ptr[T any](v T) *T { return &v }

// textResult is a tool answer whose text content is text (the structured
// content is added by the SDK from the typed output).
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// toolErr is a tool's failure as the model sees it (the SDK answers it
// as is_error with this text): the service's code and message.
func toolErr(err error) error { return errors.New(errorText(err)) }

// process_run and process_output read for a model as follows (the other
// process tools by their routes' Text).
func init() {
	views["process_run"] = view{budget: true, args: func(args map[string]json.RawMessage, max int) {
		// max_chars characters are at most 4 bytes each.
		if _, set := args["max_output_bytes"]; !set {
			args["max_output_bytes"] = json.RawMessage(strconv.Itoa(min(4*max, 16<<20)))
		}
	}, answer: answerAs(processRun)}
	views["process_output"] = view{budget: true, args: func(args map[string]json.RawMessage, max int) {
		args["max_chars"] = json.RawMessage(strconv.Itoa(max))
	}, answer: answerAs(func(_ *Service, args map[string]json.RawMessage, o process.OutputText, _ int) *mcp.CallToolResult {
		text := o.Text
		var offset int64
		_ = json.Unmarshal(args["offset"], &offset)
		if !o.Done && o.NextOffset != offset {
			text += fmt.Sprintf("\n[output continues: call process_output with offset=%d]", o.NextOffset)
		}
		return structuredResult(text, o)
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
