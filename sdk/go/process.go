package deckhand

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/deckhand-dev/deckhand/sdk/go/api/process"
)

// Run runs a command to its end and answers its output and exit code
// (POST /api/v1/process/run). A program that cannot start is no error:
// its State is failed_to_start.
func (c *Container) Run(ctx context.Context, in process.RunInput) (*process.RunResult, error) {
	var r process.RunResult
	if err := c.Call(ctx, http.MethodPost, "process", "/api/v1/process/run", nil, in, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Start starts a command in the background and answers its record.
func (c *Container) Start(ctx context.Context, in process.StartInput) (*process.Process, error) {
	var p process.Process
	if err := c.Call(ctx, http.MethodPost, "process", "/api/v1/process", nil, in, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// WriteStdin writes data to a process's standard input.
func (c *Container) WriteStdin(ctx context.Context, id string, data []byte) error {
	// The JSON form of the body (the route also takes the raw bytes).
	body := struct {
		Data     string `json:"data"`
		Encoding string `json:"encoding"`
	}{base64.StdEncoding.EncodeToString(data), "base64"}
	return c.Call(ctx, http.MethodPost, "process", "/api/v1/process/"+url.PathEscape(id)+"/stdin", nil, body, nil)
}

// CloseStdin closes a process's standard input.
func (c *Container) CloseStdin(ctx context.Context, id string) error {
	return c.Call(ctx, http.MethodPost, "process", "/api/v1/process/"+url.PathEscape(id)+"/stdin/close", nil, nil, nil)
}

// Output is one piece of a process's output.
type Output struct {
	Stream string // stdout or stderr
	Offset int64  // of Data's first byte in the process's whole output
	Data   []byte
}

// ErrOutputGap is wrapped by the error a Stream returns when output it
// asked for was no longer kept (the bounds of the process service).
var ErrOutputGap = errors.New("deckhand: output was dropped before it was read")

// StreamOptions tune Stream.
type StreamOptions struct {
	// Since is the offset to start at (0: the beginning).
	Since int64
	// AllowGaps goes on after a gap (output no longer kept) instead of
	// ending with ErrOutputGap.
	AllowGaps bool
	// OnGap, when set, is told of each gap (bytes from to to were no
	// longer kept) and the stream goes on past it, as with AllowGaps.
	OnGap func(from, to int64)
	// Binary follows over the route's WebSocket with binary frames, the
	// fast path for bulk output, instead of Server-Sent Events of JSON
	// text. A piece may then end inside a UTF-8 character, and its Data
	// is valid only until fn returns.
	Binary bool
	// ReconnectFor, when set, bounds reconnecting by time instead of by
	// MaxReconnects: dropped connections are retried (every 50 ms to 1 s)
	// until the service has been unreachable this long without any
	// output between.
	ReconnectFor time.Duration
}

// Stream follows a process's output until it ends, calling fn with each
// piece in order, and answers the final record. A dropped connection is
// resumed from the offset after the last piece fn got, so fn sees every
// byte once; MaxReconnects drops in a row without progress end it. fn's
// error ends the stream with that error.
func (c *Container) Stream(ctx context.Context, id string, o StreamOptions, fn func(Output) error) (*process.Process, error) {
	off := o.Since
	fails := 0
	var down time.Time
	for {
		start := off
		follow := c.follow
		if o.Binary {
			follow = c.followWS
		}
		end, err := follow(ctx, id, &off, o, fn)
		if err == nil {
			return end, nil
		}
		var fnErr callbackError
		var apiErr *Error
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &fnErr):
			return nil, fnErr.err
		case errors.As(err, &apiErr), errors.Is(err, ErrOutputGap):
			return nil, err
		}
		if off > start {
			fails, down = 0, time.Time{}
		}
		fails++
		wait := backoff(fails)
		if o.ReconnectFor > 0 {
			if down.IsZero() {
				down = time.Now()
			}
			if time.Since(down) > o.ReconnectFor {
				return nil, fmt.Errorf("deckhand: output of %s: connection lost for %s: %w", id, o.ReconnectFor, err)
			}
			wait = reconnectWait(fails)
		} else if fails > MaxReconnects {
			return nil, fmt.Errorf("deckhand: output of %s: %d reconnects without progress: %w", id, fails-1, err)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// StreamTo is Stream writing stdout and stderr to two writers (either may
// be nil to drop that stream).
func (c *Container) StreamTo(ctx context.Context, id string, stdout, stderr io.Writer) (*process.Process, error) {
	return c.Stream(ctx, id, StreamOptions{}, writeTo(stdout, stderr))
}

// writeTo writes each piece of output to stdout or stderr by its stream
// (a nil writer drops that stream).
func writeTo(stdout, stderr io.Writer) func(Output) error {
	return func(o Output) error {
		w := stdout
		if o.Stream == "stderr" {
			w = stderr
		}
		if w == nil {
			return nil
		}
		_, err := w.Write(o.Data)
		return err
	}
}

type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// follow reads one Server-Sent Events connection, moving *off past each
// piece delivered; it answers the final record at the end event.
func (c *Container) follow(ctx context.Context, id string, off *int64, o StreamOptions, fn func(Output) error) (*process.Process, error) {
	path := "/api/v1/process/" + url.PathEscape(id) + "/output"
	resp, err := c.get(ctx, "process", path, url.Values{"follow": {"true"}, "since": {strconv.FormatInt(*off, 10)}},
		http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var end *process.Process
	err = readEvents(resp.Body, func(ev event) error {
		if !ev.HasData {
			return nil
		}
		var err error
		end, err = deliver(ev.Event, ev.Data, off, o, fn)
		if err == nil && end != nil {
			return errEnded
		}
		return err
	})
	switch {
	case errors.Is(err, errEnded):
		return end, nil
	case err != nil:
		return nil, err
	}
	return nil, io.ErrUnexpectedEOF
}

// errEnded stops reading a stream at its end event.
var errEnded = errors.New("end")

func deliver(event, data string, off *int64, o StreamOptions, fn func(Output) error) (*process.Process, error) {
	switch event {
	case "output", "message":
		var ch process.Chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return nil, fmt.Errorf("deckhand: unreadable output event: %w", err)
		}
		b, err := decodeChunk(ch)
		if err != nil {
			return nil, err
		}
		return nil, deliverPiece(Output{Stream: string(ch.Stream), Offset: int64(ch.Offset), Data: b}, off, fn)
	case "gap":
		var g process.Gap
		_ = json.Unmarshal([]byte(data), &g)
		if o.OnGap != nil {
			o.OnGap(int64(g.From), int64(g.To))
		} else if !o.AllowGaps {
			return nil, fmt.Errorf("%w: bytes %d to %d", ErrOutputGap, g.From, g.To)
		}
		*off = max(*off, int64(g.To))
	case "end":
		var e struct {
			Process process.Process `json:"process"`
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return nil, fmt.Errorf("deckhand: unreadable end event: %w", err)
		}
		return &e.Process, nil
	}
	return nil, nil
}
