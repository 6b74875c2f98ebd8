package deckhand

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/deckhand-dev/deckhand/sdk/go/api/files"
	"github.com/deckhand-dev/deckhand/sdk/go/api/process"
)

// Command is a program to run in a container: Args (an argv) or Shell (a
// line for /bin/sh -c), with what else it needs.
type Command struct {
	Args  []string
	Shell string
	Env   map[string]string
	Cwd   string
	// Stdin is written to the program's standard input, which is then
	// closed.
	Stdin []byte
	// Timeout ends the program (0: the service's default).
	Timeout time.Duration
}

func (cmd Command) body() (map[string]any, error) {
	if len(cmd.Args) == 0 && cmd.Shell == "" {
		return nil, errors.New("deckhand: Command: give Args or Shell")
	}
	if len(cmd.Args) > 0 && cmd.Shell != "" {
		return nil, errors.New("deckhand: Command: give Args or Shell, not both")
	}
	b := map[string]any{}
	if len(cmd.Args) > 0 {
		b["cmd"] = cmd.Args
	} else {
		b["shell"] = cmd.Shell
	}
	if len(cmd.Env) > 0 {
		b["env"] = cmd.Env
	}
	if cmd.Cwd != "" {
		b["cwd"] = cmd.Cwd
	}
	if cmd.Stdin != nil {
		b["stdin"], b["stdin_encoding"] = base64.StdEncoding.EncodeToString(cmd.Stdin), "base64"
	}
	if cmd.Timeout > 0 {
		b["timeout_ms"] = cmd.Timeout.Milliseconds()
	}
	return b, nil
}

// Result is how a program ended. A program that exits non-zero is no
// error: ExitCode says so. State is exited, killed, timed_out or
// failed_to_start (then Error says why).
type Result struct {
	ID       string
	Stdout   string
	Stderr   string
	ExitCode int
	State    string
	Signal   string
	Error    string
	// Truncated: the output was longer than the service keeps for a run.
	Truncated bool
	Duration  time.Duration
}

// Processes runs programs in a container: Container.Process.
type Processes struct{ c *Container }

// Run runs argv to its end and answers its output and exit code.
func (p Processes) Run(ctx context.Context, argv ...string) (Result, error) {
	return p.RunCommand(ctx, Command{Args: argv})
}

// RunCommand runs cmd to its end.
func (p Processes) RunCommand(ctx context.Context, cmd Command) (Result, error) {
	body, err := cmd.body()
	if err != nil {
		return Result{}, err
	}
	var r process.RunResult
	if err := p.c.Call(ctx, http.MethodPost, "process", "/api/v1/process/run", nil, body, &r); err != nil {
		return Result{}, err
	}
	if r.Encoding != nil && *r.Encoding == process.RunResultEncodingBase64 {
		o, err1 := base64.StdEncoding.DecodeString(r.Stdout)
		e, err2 := base64.StdEncoding.DecodeString(r.Stderr)
		if err := errors.Join(err1, err2); err != nil {
			return Result{}, err
		}
		r.Stdout, r.Stderr = string(o), string(e)
	}
	res := ended(r.Id, string(r.State), r.ExitCode, r.Signal, r.Error, r.DurationMs)
	res.Stdout, res.Stderr, res.Truncated = r.Stdout, r.Stderr, r.Truncated
	return res, nil
}

// ended is how a program ended, from the service's record of it (ExitCode
// -1 when the record has none).
func ended(id, state string, exitCode *int, signal, msg *string, durationMs int) Result {
	res := Result{ID: id, ExitCode: -1, State: state, Duration: time.Duration(durationMs) * time.Millisecond}
	if exitCode != nil {
		res.ExitCode = *exitCode
	}
	if signal != nil {
		res.Signal = *signal
	}
	if msg != nil {
		res.Error = *msg
	}
	return res
}

// Start starts argv in the background; follow its output with the
// answer's Wait or Stream.
func (p Processes) Start(ctx context.Context, argv ...string) (Running, error) {
	return p.StartCommand(ctx, Command{Args: argv})
}

// StartCommand starts cmd in the background. Its output is kept from the
// first byte for a follower that has yet to attach.
func (p Processes) StartCommand(ctx context.Context, cmd Command) (Running, error) {
	body, err := cmd.body()
	if err != nil {
		return Running{}, err
	}
	body["hold_output"] = true
	var r struct {
		ID  string `json:"id"`
		PID int    `json:"pid"`
	}
	if err := p.c.Call(ctx, http.MethodPost, "process", "/api/v1/process", nil, body, &r); err != nil {
		return Running{}, err
	}
	return Running{ID: r.ID, PID: r.PID, c: p.c}, nil
}

// Running is a program started in the background.
type Running struct {
	ID  string
	PID int
	c   *Container
}

// Stream calls fn with each piece of the program's output, in order,
// until it ends, and answers how it ended (Stdout and Stderr empty: fn had
// them). A dropped connection is resumed where it stopped, so fn sees
// every byte once.
func (r Running) Stream(ctx context.Context, fn func(Output) error) (Result, error) {
	end, err := r.c.Stream(ctx, r.ID, StreamOptions{}, fn)
	if err != nil {
		return Result{}, err
	}
	return ended(end.Id, string(end.State), end.ExitCode, end.Signal, end.Error, end.DurationMs), nil
}

// Wait writes the program's stdout and stderr to two writers (nil drops
// that stream) until it ends, resuming after dropped connections.
func (r Running) Wait(ctx context.Context, stdout, stderr io.Writer) (Result, error) {
	return r.Stream(ctx, writeTo(stdout, stderr))
}

// Kill ends the program (SIGKILL to its process group).
func (r Running) Kill(ctx context.Context) error {
	return r.c.Call(ctx, http.MethodDelete, "process", "/api/v1/process/"+url.PathEscape(r.ID), nil, nil, nil)
}

// WriteStdin writes data to the program's standard input.
func (r Running) WriteStdin(ctx context.Context, data []byte) error {
	return r.c.WriteStdin(ctx, r.ID, data)
}

// CloseStdin closes the program's standard input.
func (r Running) CloseStdin(ctx context.Context) error { return r.c.CloseStdin(ctx, r.ID) }

// FileInfo is one entry of a directory listing.
type FileInfo struct {
	Name     string
	Path     string
	Type     string // file, dir, symlink or other
	Size     int64
	Mode     string // octal permission bits, e.g. 0644
	Modified time.Time
	Owner    string
	ETag     string // of a regular file's content
}

// Files reads and writes files in a container: Container.Files.
type Files struct{ c *Container }

// Read is the content of the file at path. Use Download for large files.
func (f Files) Read(ctx context.Context, path string) ([]byte, error) {
	var b bytes.Buffer
	if _, err := f.c.Download(ctx, path, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write puts data at path, replacing a file there; the file appears whole
// or not at all.
func (f Files) Write(ctx context.Context, path string, data []byte) error {
	p := "/api/v1/files/content"
	req, err := f.c.request(ctx, http.MethodPut, "files", p, url.Values{"path": {path}, "overwrite": {"true"}}, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(data))
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := f.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return errorOf(http.MethodPut, p, resp.StatusCode, raw)
	}
	return nil
}

// List is the entries of the directory at path, sorted by path.
func (f Files) List(ctx context.Context, dir string) ([]FileInfo, error) {
	var l files.Listing
	if err := f.c.Call(ctx, http.MethodGet, "files", "/api/v1/files", url.Values{"path": {dir}}, nil, &l); err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(l.Entries))
	for _, e := range l.Entries {
		out = append(out, fileInfo(e))
	}
	return out, nil
}

// fileInfo is an entry of the files service as a value, without its ETag
// (a listing's are left out).
func fileInfo(e files.Entry) FileInfo {
	return FileInfo{Name: e.Name, Path: e.Path, Type: string(e.Type), Size: int64(e.Size), Mode: e.Mode, Modified: e.Modified, Owner: e.Owner}
}

// Upload copies the local file at local to path in the container with a
// resumable, checksummed upload (Container.Upload).
func (f Files) Upload(ctx context.Context, local, path string) (Transfer, error) {
	fh, err := os.Open(local)
	if err != nil {
		return Transfer{}, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return Transfer{}, err
	}
	t, err := f.c.Upload(ctx, path, fh, st.Size(), UploadOptions{})
	if err != nil {
		return Transfer{}, err
	}
	return *t, nil
}

// Download copies path in the container to the local file at local with
// a resumable, checksummed download (Container.Download); the local file
// is written beside and renamed into place once complete.
func (f Files) Download(ctx context.Context, path, local string) (Transfer, error) {
	tmp, err := os.CreateTemp(filepath.Dir(local), ".deckhand-download-*")
	if err != nil {
		return Transfer{}, err
	}
	defer os.Remove(tmp.Name())
	t, err := f.c.Download(ctx, path, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Transfer{}, err
	}
	if err := os.Rename(tmp.Name(), local); err != nil {
		return Transfer{}, err
	}
	return *t, nil
}
