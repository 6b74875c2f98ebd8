package process

import (
	"context"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// runText is how process_run's answer reads for a model: stdout (binary
// output named, not shown), where the whole output is when it was
// trimmed, stderr after a [stderr] line, and how the command ended unless
// it exited 0.
const runText = `{{if eq .state "failed_to_start"}}failed to start: {{.error}}{{else}}` +
	`{{$text := .stdout}}{{if .encoding}}{{$text = "<binary output, base64 in process_output>"}}{{end}}` +
	`{{if .truncated}}{{$text = printf "%s\n[the whole output: process_output with id=%s and offset=0]" $text .id}}{{end}}` +
	`{{if and .stderr (not .encoding)}}{{$text = printf "%s[stderr]\n%s" (line $text) .stderr}}{{end}}` +
	`{{$code := printf "exit code %v" .exit_code}}{{if eq $code "exit code <nil>"}}{{$code = "no exit code"}}{{end}}` +
	`{{if and (eq .state "exited") (eq $code "exit code 0")}}{{$text}}{{else}}{{line $text}}[` +
	`{{if eq .state "exited"}}{{$code}}{{else if eq .state "timed_out"}}timed out and stopped, {{$code}}` +
	`{{else if eq .state "killed"}}killed by a signal, {{$code}}{{else}}{{.state}}, {{$code}}{{end}}]{{end}}{{end}}`

// runFailed makes a command that did not exit 0 process_run's failure.
const runFailed = `{{if not (and (eq .state "exited") (eq (printf "%v" .exit_code) "0"))}}failed{{end}}`

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"process"}
	const base = "/api/v1/process"
	return []platform.Route{
		{Method: http.MethodPost, Path: base + "/run", OperationID: "runProcess", Tags: tags, Summary: "Run a command to its end",
			Description: "Starts the command as POST /api/v1/process does and answers once it has ended and its output has been " +
				"read: stdout and stderr (the first max_output_bytes of each; truncated says more was written), exit_code, " +
				"signal, state, end_reason and duration_ms. The bytes are text when both streams are UTF-8, else both are " +
				"base64 with encoding base64. Standard input is stdin, then end of file. An unknown program is no error: " +
				"state failed_to_start with the OS's reason in error. A bad user or cwd is 400 INVALID naming the field; too " +
				"many running processes 429. The process is an ordinary one meanwhile (listed, signalled, followed) and is " +
				"kept afterwards like any other; a client that goes away does not stop it.",
			Op: platform.Op(s.Run),
			Tool: &platform.Tool{Name: "process_run", Title: "Run a command",
				Description: "Run a command in the container to its end and answer its output and exit code. Give cmd (an argv array, " +
					"no shell) or shell (a /bin/sh -c line). The text content is stdout, then stderr after a [stderr] line; " +
					"when the command exits non-zero, times out, is killed or cannot start, the result is an error (isError) and " +
					"the text ends with the exit code. The structured content has stdout, stderr, exit_code and state. Output past " +
					"max_chars is trimmed with a marker: read the rest with process_output and the answer's id. For a long-running " +
					"or interactive program use process_start instead.",
				Budget: true, Destructive: true, OpenWorld: true, Text: runText, Failed: runFailed}},
		{Method: http.MethodPost, Path: base, OperationID: "startProcess", Tags: tags, Summary: "Start a command in the background",
			Description: "Answers the process's record at once (201; on the record's disk copy first). With client_token, a " +
				"request that reuses a token answers the process that token started (200), so a client that lost the answer " +
				"retries safely; 50 at once still start one process. keep_stdin_open leaves standard input open for " +
				"POST .../stdin; pty runs it on a pseudo-terminal of that size (one output stream, stdout).",
			Status: http.StatusCreated, Statuses: []int{http.StatusOK}, Op: platform.Op(s.startOp),
			Tool: &platform.Tool{Name: "process_start", Title: "Start a command in the background",
				Description: "Start a command and answer at once with its id; read its output with process_output, write to it with " +
					"process_stdin (start it with keep_stdin_open), stop it with process_signal. For a command you only need the " +
					"result of, process_run is simpler.",
				Text: "started process {{.id}} ({{.state}})", Destructive: true, OpenWorld: true}},
		{Method: http.MethodGet, Path: base, OperationID: "listProcesses", Tags: tags, Summary: "List processes, oldest first",
			Description: "Running processes and finished ones still kept (--process-retention, --process-max-finished).",
			Op:          platform.Op(s.List),
			Tool: &platform.Tool{Name: "process_list", Title: "List processes",
				Description: "List the processes started through the process service (running, and finished ones still kept), " +
					"oldest first; tag or state keep those with it.",
				Text: "{{range .processes}}{{.id}} {{.state}} {{join .cmd \" \"}}\n{{end}}", ReadOnly: true, Idempotent: true}},
		{Method: http.MethodGet, Path: base + "/{id}", OperationID: "getProcess", Tags: tags, Summary: "One process's record",
			Description: "State, exit code, signal, start and end times, output byte counts (output_bytes is the offset the " +
				"next byte will have; output_kept_from the oldest one still readable). 404 for an unknown or removed id.",
			Op: platform.Op(s.Get)},
		{Method: http.MethodDelete, Path: base + "/{id}", OperationID: "killProcess", Tags: tags, Summary: "Stop a process's whole tree",
			Description: "SIGTERM to its process group and every descendant (also those that left the group), SIGKILL to all " +
				"of them after grace_ms (default --process-kill-grace); answers the final record (state killed, end_reason " +
				"killed) once the main process has ended. A process already ended answers its record unchanged.",
			Op: platform.Op(s.Kill)},
		{Method: http.MethodGet, Path: base + "/{id}/output", OperationID: "getProcessOutput", Tags: tags, Summary: "Read or follow the output",
			Description: "Output from byte offset since, as chunks {type:output, stream (stdout or stderr), offset (of the " +
				"chunk's first byte in the process's output: both streams, in the order read), data (UTF-8 text, or base64 " +
				"with encoding base64)}, in order. Without follow: a JSON page (at most max_bytes) with next_offset to read " +
				"on and done once the output is complete and read. follow=true: Server-Sent Events — event output (id: the " +
				"offset after it, so Last-Event-ID resumes), gap {from, to} when bytes from since were no longer kept, and " +
				"finally one event end {type:end, process: the final record}; a comment every 15 s keeps it alive. A " +
				"WebSocket upgrade streams the same messages as text frames (follow is the default there; follow=false ends " +
				"with a 1000 close once caught up), or with binary=true each output chunk as a binary frame: one byte stream " +
				"(1 stdout, 2 stderr), eight bytes offset (big-endian), then the bytes; gap and end stay text. The client " +
				"may send binary frames (written to standard input) and text frames {type:stdin_close}, {type:resize, " +
				"rows, cols}, {type:signal, signal}; a refused one is answered {type:error, message}. The server pings " +
				"every 15 s and drops a client silent for 37.5 s or that takes nothing for 60 s. A reconnect with its last " +
				"offset gets everything after it while kept (see the bounds in the service description; a follower's place " +
				"is held for --process-resume-grace after it drops). since past the end is 400.",
			Response: OutputPage{}, WebSocket: true, Op: platform.ConnOp(s.output)},
		{Method: http.MethodGet, Path: base + "/{id}/output/text", OperationID: "getProcessOutputText", Tags: tags, Summary: "Read the output as one text",
			Description: "The output from byte offset as one text of at most max_chars characters (stdout and stderr " +
				"interleaved as written; binary output is named by its size), next_offset to read on, done once the " +
				"process has ended and everything was read, its state and exit code. It does not wait for output.",
			Op: platform.Op(s.ReadOutputText),
			Tool: &platform.Tool{Name: "process_output", Title: "Read a process's output",
				Description: "Read a process's output (stdout and stderr interleaved as written) from a byte offset, at most max_chars; " +
					"next_offset is where to read on, done says it has ended and everything was read. Does not wait for new output.",
				Budget: true, ReadOnly: true, Idempotent: true,
				Text: "{{.text}}{{if not .done}}{{if ne (printf \"%d\" .next_offset) (or (arg \"offset\") \"0\")}}" +
					"\n[output continues: call process_output with offset={{.next_offset}}]{{end}}{{end}}"}},
		{Method: http.MethodPost, Path: base + "/{id}/stdin/text", OperationID: "writeProcessStdinText", Tags: tags, Summary: "Write text to standard input",
			Description: "Writes text to the process's standard input, then closes it with close=true. Answers {written, " +
				"closed}; the refusals are those of POST .../stdin and .../stdin/close.",
			Op: platform.Op(s.WriteStdinText),
			Tool: &platform.Tool{Name: "process_stdin", Title: "Write to a process's input",
				Description: "Write text to the standard input of a process started with keep_stdin_open; close=true sends end of file.",
				Text:        "wrote {{.written}} bytes", Destructive: true}},
		{Method: http.MethodPost, Path: base + "/{id}/stdin", OperationID: "writeProcessStdin", Tags: tags, Summary: "Write to standard input",
			Description: "The request body is the bytes (any content type), or with Content-Type application/json " +
				"{data (the bytes, or their base64), encoding (utf-8 or base64)}. Answers {written}. 409 when its input is " +
				"closed or it has ended; 504 when it does not read them within 10 s (details written=N says how many were).",
			Op: platform.Op(s.stdinOp)},
		{Method: http.MethodPost, Path: base + "/{id}/stdin/close", OperationID: "closeProcessStdin", Tags: tags, Summary: "Close standard input",
			Description: "The process reads end of file. On a pty this types Ctrl-D (end of file for a program reading the " +
				"terminal line by line) and input stays open.",
			Op: platform.Op(s.CloseStdin)},
		{Method: http.MethodPost, Path: base + "/{id}/resize", OperationID: "resizeProcess", Tags: tags, Summary: "Resize the pty",
			Description: "Sets rows and cols of the process's pseudo-terminal (SIGWINCH to its foreground group); 409 without a pty.",
			Op:          platform.Op(withID(s.Resize))},
		{Method: http.MethodPost, Path: base + "/{id}/signal", OperationID: "signalProcess", Tags: tags, Summary: "Signal the process group",
			Description: "Sends signal (a name: TERM, SIGHUP, usr1; or a number 1-64) to the whole process group; 400 " +
				"INVALID naming signal for an unknown one, 409 once the process has ended.",
			Op: platform.Op(withID(s.Signal)),
			Tool: &platform.Tool{Name: "process_signal", Title: "Signal a process",
				Description: "Send a signal (TERM, INT, KILL, HUP ...) to a process's whole process group. Answers its record.",
				Text:        "sent {{arg \"signal\"}} to process {{.id}}", Destructive: true}},
	}
}

// PathAndBody is the input of a route whose domain input carries the
// path's id beside its JSON body (json:"-"): the binder takes the id from
// the path and the body as Body.
type PathAndBody[B any] struct {
	ID   string `path:"id" doc:"the process's id"`
	Body B
}

type idSetter interface{ setID(string) }

func (in *ResizeInput) setID(id string) { in.ID = id }
func (in *SignalInput) setID(id string) { in.ID = id }

// withID is fn taking its id from the path and the rest from the body.
func withID[B any, P interface {
	*B
	idSetter
}](fn func(context.Context, B) (Process, error)) func(context.Context, PathAndBody[B]) (Process, error) {
	return func(ctx context.Context, in PathAndBody[B]) (Process, error) {
		P(&in.Body).setID(in.ID)
		return fn(ctx, in.Body)
	}
}

// Started is POST /api/v1/process's answer: 201 with a new process, 200
// with the one a reused client_token started.
type Started struct {
	Status int
	Body   Process
}

func (s *Service) startOp(ctx context.Context, in StartInput) (Started, error) {
	res, err := s.Start(ctx, in)
	if err != nil {
		return Started{}, err
	}
	st := http.StatusCreated
	if !res.Created {
		st = http.StatusOK
	}
	return Started{Status: st, Body: res.Process}, nil
}

// StdinRequest is POST .../stdin: the body is the bytes, or with
// Content-Type application/json a StdinInput.
type StdinRequest struct {
	ID          string `path:"id" doc:"the process's id"`
	ContentType string `header:"Content-Type" doc:"application/json: the body is {data, encoding}; any other type: the body is the bytes"`
	Body        []byte
}

func (s *Service) stdinOp(ctx context.Context, in StdinRequest) (StdinResult, error) {
	req := StdinInput{bytes: in.Body}
	if strings.HasPrefix(strings.ToLower(in.ContentType), "application/json") {
		req = StdinInput{}
		if err := platform.DecodeBytes(in.Body, &req); err != nil {
			return StdinResult{}, err
		}
	}
	req.ID = in.ID
	return s.WriteStdin(ctx, req)
}

// OutputRequest is GET /api/v1/process/{id}/output: a page of output,
// or with follow (or a WebSocket upgrade) its stream.
type OutputRequest struct {
	ID          string `path:"id"`
	Since       int64  `query:"since" minimum:"0" default:"0" doc:"offset to start at"`
	Follow      *bool  `query:"follow" doc:"stream until the process ends (SSE; a WebSocket follows unless false)"`
	Binary      bool   `query:"binary" default:"false" doc:"WebSocket: output as binary frames"`
	MaxBytes    int64  `query:"max_bytes" minimum:"1" maximum:"16777216" doc:"without follow: at most this many bytes (default 1 MiB, at most 16 MiB)"`
	LastEventID *int64 `header:"Last-Event-ID" minimum:"0" doc:"follow: resume at this offset (EventSource sends it on reconnect)"`
}

// output answers a page, or streams over SSE or a WebSocket on the
// connection itself (the fast path a follower of bulk output needs).
func (s *Service) output(c fiber.Ctx, req OutputRequest) error {
	in := OutputInput{ID: req.ID, Since: req.Since, MaxBytes: req.MaxBytes}
	ws, follow := isUpgrade(c), req.Follow != nil && *req.Follow
	if (follow || ws) && req.LastEventID != nil {
		in.Since = *req.LastEventID
	}
	if !ws && !follow {
		page, err := s.Output(c.Context(), in)
		if err != nil {
			return err
		}
		return c.Status(http.StatusOK).JSON(page)
	}
	p, err := s.get(in.ID)
	if err != nil {
		return err
	}
	if err := checkSince(p, in.Since); err != nil {
		return err
	}
	if ws {
		return s.serveWS(c, p, in.Since, req.Binary, req.Follow == nil || follow)
	}
	return s.serveSSE(c, p, in.Since)
}
