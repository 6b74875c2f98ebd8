package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/mcptool"
)

func ptr[T any](v T) *T { return &v }

// textResult is a tool answer whose text content is text (the structured
// content is added by the SDK from the typed output).
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// toolErr is a tool's failure as the model sees it (the SDK answers it
// as is_error with this text): the service's code and message.
func toolErr(err error) error { return errors.New(mcptool.ErrorText(err)) }

// views are the route tools' own readings by tool name: process_run's
// (the other process tools read as their routes' faces say).
var views = map[string]view{"process_run": {args: func(args map[string]json.RawMessage, max int) {
	// max_chars characters are at most 4 bytes each.
	if _, set := args["max_output_bytes"]; !set {
		args["max_output_bytes"] = json.RawMessage(strconv.Itoa(min(4*max, 16<<20)))
	}
}, answer: processRun}}

// processRun reads a run's answer: stdout and stderr trimmed to max
// characters (in the structured content too), a failure as an error whose
// text says how the command ended.
func processRun(out any, max int) (*mcp.CallToolResult, error) {
	raw, isRaw := out.(json.RawMessage)
	var err error
	if !isRaw {
		raw, err = json.Marshal(out)
	}
	var m map[string]json.RawMessage
	var r struct {
		ID, Stdout, Stderr, Encoding, State, Error string
		ExitCode                                   *int `json:"exit_code"`
		Truncated                                  bool
	}
	if err == nil {
		err = errors.Join(json.Unmarshal(raw, &m), json.Unmarshal(raw, &r))
	}
	if err != nil {
		return nil, err
	}
	if r.Encoding == "base64" {
		r.Stdout, r.Stderr = "<binary output, base64 in process_output>", ""
	}
	stdout, stderr := mcptool.Trim(r.Stdout, 0, max), mcptool.Trim(r.Stderr, 0, max)
	r.Truncated = r.Truncated || stdout.Next > 0 || stderr.Next > 0
	m["stdout"], _ = json.Marshal(stdout.Text)
	m["stderr"], _ = json.Marshal(stderr.Text)
	m["truncated"], _ = json.Marshal(r.Truncated)
	text := stdout.Text
	if r.Truncated {
		text += fmt.Sprintf("\n[the whole output: process_output with id=%s and offset=0]", r.ID)
	}
	res := &mcp.CallToolResult{StructuredContent: m, IsError: true}
	if r.State == "failed_to_start" {
		res.Content = []mcp.Content{&mcp.TextContent{Text: "failed to start: " + r.Error}}
		return res, nil
	}
	// A model reads the text, not the structured content: a failure says
	// so there, with the exit code and what the command wrote to stderr.
	if stderr.Text != "" {
		text = withNewline(text) + "[stderr]\n" + stderr.Text
	}
	res.IsError = r.State != "exited" || r.ExitCode == nil || *r.ExitCode != 0
	if res.IsError {
		text = withNewline(text) + "[" + endOf(r.State, r.ExitCode) + "]"
	}
	res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
	return res, nil
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
	case "exited":
		return c
	case "timed_out":
		return "timed out and stopped, " + c
	case "killed":
		return "killed by a signal, " + c
	}
	return state + ", " + c
}
