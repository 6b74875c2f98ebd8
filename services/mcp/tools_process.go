package mcp

import (
	"context"
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

// RunArgs are process_run's arguments.
type RunArgs struct {
	Cmd       []string `json:"cmd,omitempty" jsonschema:"argv: the program (looked up in PATH) and its arguments; give cmd or shell"`
	Shell     string   `json:"shell,omitempty" jsonschema:"a shell command line run by /bin/sh -c (pipes, redirections); give cmd or shell"`
	Cwd       string   `json:"cwd,omitempty" jsonschema:"absolute working directory (default: the user's home)"`
	TimeoutMS int64    `json:"timeout_ms,omitempty" jsonschema:"stop the command's whole process tree after this many milliseconds (default: no limit)"`
	Stdin     string   `json:"stdin,omitempty" jsonschema:"text written to the command's standard input, then end of file"`
	MaxChars  int      `json:"max_chars,omitempty" jsonschema:"characters of stdout (and of stderr) to answer at most (default: the server's budget); the rest is read with process_output"`
}

// RunOutput is process_run's structured answer.
type RunOutput struct {
	ID         string `json:"id" jsonschema:"the process's id: its whole output stays readable with process_output"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   *int   `json:"exit_code" jsonschema:"null when it could not start; 128+N when signal N ended it"`
	State      string `json:"state" jsonschema:"exited, killed, timed_out or failed_to_start"`
	Error      string `json:"error,omitempty" jsonschema:"why it could not start"`
	DurationMS int64  `json:"duration_ms"`
	Trimmed    bool   `json:"trimmed" jsonschema:"stdout or stderr was cut to max_chars"`
}

// StartArgs are process_start's arguments.
type StartArgs struct {
	Cmd           []string `json:"cmd,omitempty" jsonschema:"argv: the program and its arguments; give cmd or shell"`
	Shell         string   `json:"shell,omitempty" jsonschema:"a shell command line run by /bin/sh -c; give cmd or shell"`
	Cwd           string   `json:"cwd,omitempty" jsonschema:"absolute working directory"`
	TimeoutMS     int64    `json:"timeout_ms,omitempty" jsonschema:"stop it after this many milliseconds (default: no limit)"`
	Tag           string   `json:"tag,omitempty" jsonschema:"a label to find it again with process_list"`
	KeepStdinOpen bool     `json:"keep_stdin_open,omitempty" jsonschema:"keep standard input open for process_stdin (default: closed, the program reads end of file)"`
}

// ProcessInfo is one process as the tools answer it.
type ProcessInfo struct {
	ID          string   `json:"id"`
	Tag         string   `json:"tag,omitempty"`
	Cmd         []string `json:"cmd"`
	State       string   `json:"state" jsonschema:"running, exited, killed, timed_out or failed_to_start"`
	ExitCode    *int     `json:"exit_code"`
	PID         int      `json:"pid,omitempty"`
	OutputBytes int64    `json:"output_bytes" jsonschema:"the offset the next output byte will have"`
	DurationMS  int64    `json:"duration_ms"`
}

func info(p process.Process) ProcessInfo {
	return ProcessInfo{ID: p.ID, Tag: p.Tag, Cmd: p.Cmd, State: p.State, ExitCode: p.ExitCode, PID: p.PID,
		OutputBytes: p.OutputBytes, DurationMS: p.DurationMS}
}

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

// IDArgs name one process.
type IDArgs struct {
	ID string `json:"id" jsonschema:"the process's id"`
}

// StdinArgs are process_stdin's arguments.
type StdinArgs struct {
	ID    string `json:"id" jsonschema:"the process's id (started with keep_stdin_open)"`
	Text  string `json:"text" jsonschema:"text written to its standard input (add \\n for a line)"`
	Close bool   `json:"close,omitempty" jsonschema:"close its standard input afterwards (end of file)"`
}

// SignalArgs are process_signal's arguments.
type SignalArgs struct {
	ID     string `json:"id" jsonschema:"the process's id"`
	Signal string `json:"signal" jsonschema:"signal name or number: INT, TERM, KILL, HUP, STOP, CONT ..."`
}

// ListArgs are process_list's arguments.
type ListArgs struct {
	Tag   string `json:"tag,omitempty" jsonschema:"only processes with this tag"`
	State string `json:"state,omitempty" jsonschema:"only processes in this state (running, exited, killed, timed_out, failed_to_start)"`
}

// ListResult is process_list's answer.
type ListResult struct {
	Processes []ProcessInfo `json:"processes"`
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
	mcp.AddTool(s.server, &mcp.Tool{Name: "process_run", Title: "Run a command",
		Description: "Run a command in the container to its end and answer its output and exit code. Give cmd (an argv array, " +
			"no shell) or shell (a /bin/sh -c line). The text content is stdout, then stderr after a [stderr] line; " +
			"when the command exits non-zero, times out, is killed or cannot start, the result is an error (isError) and " +
			"the text ends with the exit code. The structured content has stdout, stderr, exit_code and state. Output past max_chars is trimmed with a marker: read the rest with process_output and the " +
			"answer's id. For a long-running or interactive program use process_start instead.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}}, s.processRun)
	mcp.AddTool(s.server, &mcp.Tool{Name: "process_start", Title: "Start a command in the background",
		Description: "Start a command and answer at once with its id; read its output with process_output, write to it with " +
			"process_stdin, stop it with process_signal. For a command you only need the result of, process_run is simpler.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}}, s.processStart)
	mcp.AddTool(s.server, &mcp.Tool{Name: "process_output", Title: "Read a process's output",
		Description: "Read a process's output (stdout and stderr interleaved as written) from a byte offset, at most max_chars; " +
			"next_offset is where to read on, done says it has ended and everything was read. Does not wait for new output.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, s.processOutput)
	mcp.AddTool(s.server, &mcp.Tool{Name: "process_stdin", Title: "Write to a process's input",
		Description: "Write text to the standard input of a process started with keep_stdin_open; close=true sends end of file.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, s.processStdin)
	mcp.AddTool(s.server, &mcp.Tool{Name: "process_signal", Title: "Signal a process",
		Description: "Send a signal (TERM, INT, KILL, HUP ...) to a process's whole process group. Answers its record.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, s.processSignal)
	mcp.AddTool(s.server, &mcp.Tool{Name: "process_list", Title: "List processes",
		Description: "List the processes started through the process service (running, and finished ones still kept), oldest first.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, s.processList)
}

func spec(cmd []string, shell, cwd string, timeout int64) process.Spec {
	return process.Spec{Cmd: cmd, Shell: shell, Cwd: cwd, TimeoutMS: timeout}
}

func (s *Service) processRun(ctx context.Context, req *mcp.CallToolRequest, in RunArgs) (*mcp.CallToolResult, RunOutput, error) {
	who := callerOf(req.Extra)
	body := process.RunInput{Spec: spec(in.Cmd, in.Shell, in.Cwd, in.TimeoutMS)}
	body.Stdin = in.Stdin
	var r process.RunResult
	if err := s.be.json(ctx, who, call{method: http.MethodPost, service: "process", path: "/api/v1/process/run", body: body}, &r); err != nil {
		return nil, RunOutput{}, toolErr(err)
	}
	if r.Encoding == "base64" {
		r.Stdout, r.Stderr = "<binary output, base64 in process_output>", ""
	}
	max := s.budget(in.MaxChars)
	out, errp := trimText(r.Stdout, 0, max), trimText(r.Stderr, 0, max)
	o := RunOutput{ID: r.ID, Stdout: out.Text, Stderr: errp.Text, ExitCode: r.ExitCode, State: r.State, Error: r.Error,
		DurationMS: r.DurationMS, Trimmed: out.Next > 0 || errp.Next > 0 || r.Truncated}
	text := out.Text
	if o.Trimmed {
		text += fmt.Sprintf("\n[the whole output: process_output with id=%s and offset=0]", r.ID)
	}
	if r.State == process.StateFailedToStart {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed to start: " + r.Error}}}, o, nil
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
	res := textResult(text)
	res.IsError = failed
	return res, o, nil
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

func (s *Service) processStart(ctx context.Context, req *mcp.CallToolRequest, in StartArgs) (*mcp.CallToolResult, ProcessInfo, error) {
	body := process.StartInput{Spec: spec(in.Cmd, in.Shell, in.Cwd, in.TimeoutMS), KeepStdinOpen: in.KeepStdinOpen}
	body.Tag = in.Tag
	var p process.Process
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPost, service: "process", path: "/api/v1/process", body: body}, &p); err != nil {
		return nil, ProcessInfo{}, toolErr(err)
	}
	return textResult("started process " + p.ID + " (" + p.State + ")"), info(p), nil
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

func (s *Service) processSignal(ctx context.Context, req *mcp.CallToolRequest, in SignalArgs) (*mcp.CallToolResult, ProcessInfo, error) {
	var p process.Process
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPost, service: "process",
		path: "/api/v1/process/" + url.PathEscape(in.ID) + "/signal", body: map[string]string{"signal": in.Signal}}, &p); err != nil {
		return nil, ProcessInfo{}, toolErr(err)
	}
	return textResult("sent " + in.Signal + " to process " + in.ID), info(p), nil
}

func (s *Service) processList(ctx context.Context, req *mcp.CallToolRequest, in ListArgs) (*mcp.CallToolResult, ListResult, error) {
	q := url.Values{}
	if in.Tag != "" {
		q.Set("tag", in.Tag)
	}
	if in.State != "" {
		q.Set("state", in.State)
	}
	var l process.ProcessList
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "process", path: "/api/v1/process", query: q}, &l); err != nil {
		return nil, ListResult{}, toolErr(err)
	}
	out := ListResult{Processes: []ProcessInfo{}}
	var b strings.Builder
	for _, p := range l.Processes {
		out.Processes = append(out.Processes, info(p))
		fmt.Fprintf(&b, "%s %s %s\n", p.ID, p.State, strings.Join(p.Cmd, " "))
	}
	return textResult(trimText(b.String(), 0, s.set.OutputBudget).Text), out, nil
}
