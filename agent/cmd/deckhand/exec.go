package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	api "github.com/deckhand-dev/deckhand/sdk/go/api/process"
	"github.com/spf13/cobra"

	"deckhand/agent/cli"
	"deckhand/agent/cli/output"
	"deckhand/services/process"
)

// Exit statuses of `deckhand exec` beyond the command's own.
const (
	exitTimedOut = 124 // as timeout(1)
	exitNoStart  = 127 // as a shell's "command not found"
	exitFailure  = 255 // deckhand exec itself failed
)

// execCmd runs a command through the agent's process service.
func execCmd() *cobra.Command {
	var (
		agentURL, token, cwd, user, tag string
		container                       string
		env                             []string
		timeout, reconnect              time.Duration
		stdin                           bool
	)
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARGS...]",
		Short: "Run a command through the agent's process service, streaming its output",
		Long: "Run a command through the agent's process service (POST /api/v1/process through the gateway) and stream its\n" +
			"stdout and stderr here as they come. A dropped connection is resumed from the last byte received (for\n" +
			"--reconnect-timeout); nothing is lost or repeated. SIGINT, SIGTERM and SIGHUP are passed to the command's\n" +
			"process group. Exits with the command's exit code (128+N when signal N ended it), 124 when --timeout\n" +
			"stopped it, 127 when it could not start, 255 when deckhand exec itself failed.\n\n" +
			"-o json (or yaml) prints JSON lines instead: each output chunk {type:output, stream, offset, data, encoding?} and\n" +
			"finally {type:end, process}.",
		Example: "  deckhand exec -- ls -la /\n  deckhand exec --tag build --timeout 10m -- make -j4\n  DECKHAND_AGENT_URL=http://10.0.0.5:7700 deckhand exec -o json -- uname -a",
		Args:    cobra.MinimumNArgs(1),
		GroupID: cli.GroupAgent,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The root's -o: table is the command's own streams, json and
			// yaml are JSON lines.
			jsonLines := output.Of(cmd) != output.Table
			vars := map[string]string{}
			for _, kv := range env {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return &cli.ExitError{Code: exitFailure, Message: fmt.Sprintf("--env: must be NAME=VALUE, got %q", kv)}
				}
				vars[k] = v
			}
			in := process.StartInput{Spec: process.Spec{Cmd: args, Cwd: cwd, User: user, Tag: tag, Env: vars,
				TimeoutMS: timeout.Milliseconds(), ClientToken: randomToken()}, KeepStdinOpen: stdin, HoldOutput: true}
			if err := in.Validate(); err != nil {
				return &cli.ExitError{Code: exitFailure, Message: err.Error()}
			}
			if container != "" {
				u, tok, err := cli.AgentOf(cmd, container, token, cli.AccessTTL)
				if err != nil {
					return &cli.ExitError{Code: exitFailure, Message: err.Error()}
				}
				agentURL, token = u, tok
			}
			box, err := deckhand.NewContainer(agentURL, deckhand.Options{Token: token})
			if err != nil {
				return &cli.ExitError{Code: exitFailure, Message: fmt.Sprintf("--agent: must be the agent's http(s):// URL, got %q", agentURL)}
			}
			code, err := runExec(box, in, jsonLines, stdin, reconnect)
			if err != nil {
				return &cli.ExitError{Code: exitFailure, Message: err.Error()}
			}
			if code != 0 {
				return &cli.ExitError{Code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after the command belong to it
	f.StringVar(&agentURL, "agent", cli.AgentDefault(), "the agent's gateway (env DECKHAND_AGENT_URL)")
	f.StringVar(&token, "token", "", "token for the gateway's proxy permissions (prefer DECKHAND_TOKEN: flags show in ps)")
	cli.AddContainerFlag(cmd, &container)
	f.StringVar(&tag, "tag", "", "tag the process (GET /api/v1/process?tag=)")
	f.DurationVar(&timeout, "timeout", 0, "stop the command's whole tree after this long (0: no limit)")
	f.StringVar(&cwd, "cwd", "", "working directory (absolute; default the user's home)")
	f.StringVar(&user, "user", "", "run as this user (the agent must run as root)")
	f.StringArrayVar(&env, "env", nil, "NAME=VALUE added to the command's environment (repeatable)")
	f.BoolVarP(&stdin, "stdin", "i", false, "pass this command's standard input to the command (else it reads end of file)")
	f.DurationVar(&reconnect, "reconnect-timeout", time.Minute, "how long to keep retrying while the agent cannot be reached")
	return cmd
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "exec-" + hex.EncodeToString(b[:])
}

// runExec starts the command, streams its output and answers the exit
// status it should end with.
func runExec(box *deckhand.Container, in process.StartInput, asJSON, forwardStdin bool, reconnect time.Duration) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var start api.StartInput
	if err := convert(in, &start); err != nil {
		return 0, err
	}
	p, err := box.StartRetrying(ctx, start, reconnect)
	if err != nil {
		return 0, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		names := map[os.Signal]string{syscall.SIGINT: "INT", syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP"}
		for sig := range sigs {
			_ = deckhand.Retry(ctx, reconnect, func() error { return box.Signal(ctx, p.Id, names[sig]) })
		}
	}()
	if forwardStdin {
		go pumpStdin(ctx, box, p.Id, reconnect)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	out := func(o deckhand.Output) error {
		if asJSON {
			ch := process.Chunk{Type: "output", Stream: o.Stream, Offset: o.Offset, Data: string(o.Data)}
			if !utf8.Valid(o.Data) {
				ch.Data, ch.Encoding = base64.StdEncoding.EncodeToString(o.Data), "base64"
			}
			return enc.Encode(ch)
		}
		w := os.Stdout
		if o.Stream == "stderr" {
			w = os.Stderr
		}
		_, err := w.Write(o.Data)
		return err
	}
	// The terminal's streams take bytes as they come, over the fast
	// binary frames; JSON lines want chunks cut at character boundaries.
	opts := deckhand.StreamOptions{Binary: !asJSON, ReconnectFor: reconnect, OnGap: func(from, to int64) {
		fmt.Fprintf(os.Stderr, "deckhand exec: output bytes %d to %d were no longer kept\n", from, to)
	}}
	ended, err := box.Stream(ctx, p.Id, opts, out)
	if err != nil {
		return 0, err
	}
	var end process.Process
	if err := convert(ended, &end); err != nil {
		return 0, err
	}
	if asJSON {
		if err := enc.Encode(process.End{Type: "end", Process: end}); err != nil {
			return 0, err
		}
	}
	switch {
	case end.State == process.StateFailedToStart:
		if !asJSON {
			fmt.Fprintf(os.Stderr, "deckhand exec: %s\n", end.Error)
		}
		return exitNoStart, nil
	case end.State == process.StateTimedOut:
		return exitTimedOut, nil
	case end.ExitCode != nil:
		return *end.ExitCode, nil
	}
	return exitFailure, nil
}

// pumpStdin passes standard input on, then closes the command's.
func pumpStdin(ctx context.Context, box *deckhand.Container, id string, reconnect time.Duration) {
	buf := make([]byte, 64<<10)
	for {
		n, err := os.Stdin.Read(buf)
		if n > 0 {
			if deckhand.Retry(ctx, reconnect, func() error { return box.WriteStdin(ctx, id, buf[:n]) }) != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = deckhand.Retry(ctx, reconnect, func() error { return box.CloseStdin(ctx, id) })
			}
			return
		}
	}
}

// convert moves a record between the service's model (whose checks and
// JSON the command keeps) and the SDK's generated type of the same schema.
func convert(from, to any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, to)
}
