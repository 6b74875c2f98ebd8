// Package cli owns the client commands of the deckhand binary (one binary
// is both the in-container agent and its client): login, logout, whoami,
// tokens, wallet, events and notifications talk to the control plane,
// and ls, cp, rm, mkdir and logs to a container's agent, through the Go
// SDK (sdk/go), which verifies every control-plane answer's signature and
// owns the resumable, checksummed transfers. Every
// command prints through package output (-o table|json|yaml), writes
// prompts, progress and diagnostics to stderr, and fails with a non-zero
// exit and the server's own message.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"deckhand/agent/cli/output"
	"deckhand/platform/localtcp"
)

// Commands are the client commands to add to the root command.
func Commands() []*cobra.Command {
	return []*cobra.Command{
		loginCmd(), logoutCmd(), whoamiCmd(), tokensCmd(), projectsCmd(), containersCmd(), previewCmd(), walletCmd(), eventsCmd(), notificationsCmd(),
		lsCmd(), cpCmd(), rmCmd(), mkdirCmd(), logsCmd(), keepaliveCmd(),
	}
}

// Group ids for the root command's help.
const (
	GroupControl = "control"
	GroupAgent   = "agent"
)

// Groups are the help sections the client commands sit in.
func Groups() []*cobra.Group {
	return []*cobra.Group{
		{ID: GroupControl, Title: "Control plane (after deckhand login):"},
		{ID: GroupAgent, Title: "A container's agent (--agent URL):"},
	}
}

// Context is cmd's context, also ended by SIGINT and SIGTERM, so a
// transfer stops cleanly (and can be resumed) on Ctrl-C.
func Context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
}

// AgentEnv is the variable --agent reads (docs/spec/operations.md fixes this name,
// not the DECKHAND_AGENT the generic flag rule would give).
const AgentEnv = "DECKHAND_AGENT_URL"

// AgentFlags are the flags of every command that talks to an agent.
type AgentFlags struct {
	URL   string
	Token string
	// Container, when set, names a container whose agent the control
	// plane (the logged-in one) locates; it wins over URL.
	Container string
	cmd       *cobra.Command
	base      string // the agent's URL Client found
}

// DefaultAgentURL is the agent a client command talks to without --agent
// or AgentEnv.
const DefaultAgentURL = "http://127.0.0.1:7700"

// AgentDefault is --agent's default: AgentEnv, else DefaultAgentURL.
func AgentDefault() string {
	if v := os.Getenv(AgentEnv); v != "" {
		return v
	}
	return DefaultAgentURL
}

// AddAgentFlags declares --agent, --token and --container on cmd.
func AddAgentFlags(cmd *cobra.Command) *AgentFlags {
	a := &AgentFlags{}
	cmd.Flags().StringVar(&a.URL, "agent", AgentDefault(), "the container's agent (gateway) URL; env "+AgentEnv)
	cmd.Flags().StringVar(&a.Token, "token", "", "token for the gateway's proxy permissions (prefer DECKHAND_TOKEN: flags show in ps)")
	AddContainerFlag(cmd, &a.Container)
	a.cmd = cmd
	cmd.GroupID = GroupAgent
	return a
}

// AddContainerFlag declares --container on an agent command.
func AddContainerFlag(cmd *cobra.Command, into *string) {
	cmd.Flags().StringVar(into, "container", "", "a container's id: its agent is found through the control plane you are logged in to (instead of --agent)")
}

// TokenCookie is the cookie the agent's token also goes in, as the tunnel
// client sends it, for proxy-permission groups that read a cookie.
const TokenCookie = "deckhand_token"

// Client is the SDK's handle of the agent the flags name.
func (a *AgentFlags) Client() (*deckhand.Container, error) {
	u, tok := a.URL, a.Token
	if a.Container != "" {
		var err error
		if u, tok, err = AgentOf(a.cmd, a.Container, tok, AccessTTL); err != nil {
			return nil, err
		}
	}
	box, err := deckhand.NewContainer(u, deckhand.Options{Token: tok, AgentTokenCookie: TokenCookie, HTTPClient: agentHTTP()})
	if err != nil {
		return nil, fmt.Errorf("agent URL %q: must be http:// or https:// with a host, e.g. %s", u, DefaultAgentURL)
	}
	a.base = strings.TrimRight(u, "/")
	return box, nil
}

// runE is the RunE of an agent command: fn runs with the handle of the
// agent the flags name, under Context(cmd).
func (a *AgentFlags) runE(fn func(ctx context.Context, cmd *cobra.Command, args []string, box *deckhand.Container) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		box, err := a.Client()
		if err != nil {
			return err
		}
		ctx, stop := Context(cmd)
		defer stop()
		return fn(ctx, cmd, args, box)
	}
}

// explain words an error of the agent's handle for the command line.
func (a *AgentFlags) explain(err error) error { return explainAgent(a.base, err) }

// agentHTTP is the HTTP client of agent traffic: no overall timeout
// (transfers and follows run as long as they run; connecting and waiting
// for an answer's head are bounded), connections to this host tuned for
// bulk (localtcp).
func agentHTTP() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           localtcp.DialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}),
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		MaxIdleConnsPerHost:   4,
	}}
}

// AccessTTL is the lifetime of the access token an agent command asks
// for when it reaches a container by --container with no --token; a
// tunnel, which lives longer, asks for the most (MaxAccessTTL).
const (
	AccessTTL    = time.Hour
	MaxAccessTTL = 24 * time.Hour
)

// AgentOf is where container id's agent is (AgentURLOf) and the token
// to present there: token when one was given (--token, DECKHAND_TOKEN),
// else an access token the control plane signs for the logged-in user
// (POST /api/v1/containers/{id}/access-tokens), lasting ttl. The agent
// admits no one by their address alone, so a user's own login is what
// opens their container.
func AgentOf(cmd *cobra.Command, id, token string, ttl time.Duration) (agentURL, tok string, err error) {
	if agentURL, err = AgentURLOf(cmd, id); err != nil || token != "" {
		return agentURL, token, err
	}
	_, at, err := MintAccess(cmd, id, nil, ttl)
	if err != nil {
		return "", "", fmt.Errorf("container %s: an access token for its agent: %w (or give one with --token)", id, err)
	}
	return agentURL, at.Token, nil
}

// accessToken is the part of POST .../access-tokens' answer a command reads.
type accessToken struct {
	Token string `json:"token"`
}

// MintAccess asks the logged-in control plane for an access token to
// container id's agent, for services (nil: all), lasting ttl.
func MintAccess(cmd *cobra.Command, id string, services []string, ttl time.Duration) (*deckhand.Answer, *accessToken, error) {
	c, err := loadControl(true)
	if err != nil {
		return nil, nil, err
	}
	body := map[string]any{"ttl_seconds": int(ttl / time.Second)}
	if len(services) > 0 {
		body["services"] = services
	}
	resp, err := c.call(cmd, deckhand.Request{Method: http.MethodPost, Path: "/api/v1/containers/" + url.PathEscape(id) + "/access-tokens", Body: body})
	if err != nil {
		return nil, nil, err
	}
	var at accessToken
	if err := json.Unmarshal(resp.Data, &at); err != nil || at.Token == "" {
		return nil, nil, fmt.Errorf("container %s: the control plane answered no access token", id)
	}
	return resp, &at, nil
}

// lastContainer is the container AgentURLOf last read (one command reads
// one container).
var lastContainer *deckhand.Container

// PreviewURLOf is the platform proxy's port preview URL of port in the
// container AgentURLOf last found ("" when none is known).
func PreviewURLOf(port int) string {
	if lastContainer == nil {
		return ""
	}
	if u := lastContainer.URL("p" + strconv.Itoa(port)); u != "" {
		return u + "/"
	}
	return ""
}

// AgentURLOf is the gateway URL of container id's agent, as the control
// plane reaches it (its agent_addr while it runs).
func AgentURLOf(cmd *cobra.Command, id string) (string, error) {
	c, err := loadControl(true)
	if err != nil {
		return "", err
	}
	ctx, stop := Context(cmd)
	defer stop()
	var box *deckhand.Container
	if err := c.do(ctx, func() (err error) { box, err = c.client.Containers.Get(ctx, id); return err }); err != nil {
		return "", err
	}
	lastContainer = box
	ct := box.Info()
	if ct.AgentAddr == "" {
		why := ""
		if ct.StatusReason != "" {
			why = ": " + ct.StatusReason
		}
		return "", fmt.Errorf("container %s is %s, its agent cannot be reached (start it: deckhand containers start %s)%s", id, ct.Status, id, why)
	}
	return "http://" + ct.AgentAddr, nil
}

// printData prints JSON data (an answer's, as sent) in the command's
// format; table draws it, decoded.
func printData(cmd *cobra.Command, raw json.RawMessage, table func(t *output.TableWriter, data any)) error {
	p := output.New(cmd)
	var data any
	if p.Format == output.Table && len(raw) > 0 {
		var err error
		if data, err = output.Decode(raw); err != nil {
			return err
		}
	}
	return p.Print(raw, func(t *output.TableWriter) { table(t, data) })
}

// show sends r to the logged-in control plane and prints its answer's
// data (printData).
func show(cmd *cobra.Command, r deckhand.Request, table func(t *output.TableWriter, data any)) error {
	c, err := loadControl(true)
	if err != nil {
		return err
	}
	resp, err := c.call(cmd, r)
	if err != nil {
		return err
	}
	return printData(cmd, resp.Data, table)
}

// remove sends DELETE path to the logged-in control plane and prints
// {id, <done>: true, message}; the table says the message and id.
func remove(cmd *cobra.Command, path, id, done string) error {
	c, err := loadControl(true)
	if err != nil {
		return err
	}
	resp, err := c.call(cmd, deckhand.Request{Method: http.MethodDelete, Path: path})
	if err != nil {
		return err
	}
	out := map[string]any{"id": id, done: true, "message": resp.Message}
	return output.New(cmd).Line(out, "%s: %s.", resp.Message, id)
}

// objectTable draws data as one object's cols.
func objectTable(cols []output.Column) func(*output.TableWriter, any) {
	return func(t *output.TableWriter, d any) { t.Object(d, cols) }
}

// listTable draws the list under key in data, one row of cols each.
func listTable(key string, cols []output.Column) func(*output.TableWriter, any) {
	return func(t *output.TableWriter, d any) { t.Objects(output.Field(d, key), cols) }
}

// terminal is where prompts go: stdin and stderr when stdin is a terminal,
// else the controlling terminal (/dev/tty), so a password piped in with
// --password-stdin still lets the TOTP prompt reach the person.
type terminal struct {
	in  *os.File
	out io.Writer
	rd  *bufio.Reader
}

func openTerminal() (*terminal, func(), error) {
	if term.IsTerminal(int(os.Stdin.Fd())) {
		return &terminal{in: os.Stdin, out: os.Stderr, rd: bufio.NewReader(os.Stdin)}, func() {}, nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !term.IsTerminal(int(tty.Fd())) {
		if tty != nil {
			tty.Close()
		}
		return nil, func() {}, errNoTerminal
	}
	return &terminal{in: tty, out: tty, rd: bufio.NewReader(tty)}, func() { tty.Close() }, nil
}

var errNoTerminal = errors.New("no terminal to prompt on")

func (t *terminal) line(prompt string) (string, error) {
	fmt.Fprint(t.out, prompt)
	s, err := t.rd.ReadString('\n')
	if err != nil && s == "" {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

func (t *terminal) secret(prompt string) (string, error) {
	fd := int(t.in.Fd())
	if restore, err := echoOff(fd); err == nil {
		defer restore()
	}
	fmt.Fprint(t.out, prompt)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(t.out)
	return string(b), err
}

// progress is a progress bar on stderr when stderr is a terminal, else nil
// (a pipe or a log gets no bar).
func progress() *bar {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	return &bar{w: os.Stderr}
}

// bar shows a transfer's progress with schollz/progressbar; a nil *bar
// shows nothing.
type bar struct {
	w     io.Writer
	b     *progressbar.ProgressBar
	total int64
	cur   int64
}

func (b *bar) Start(label string, total, done int64) {
	if b == nil {
		return
	}
	b.total, b.cur = total, done
	b.b = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription(label),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*1e6),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }),
	)
	_ = b.b.Set64(done)
}

func (b *bar) Set(done int64) {
	if b == nil {
		return
	}
	b.cur = done
	_ = b.b.Set64(done)
}

func (b *bar) Finish() {
	if b == nil {
		return
	}
	if b.cur >= b.total {
		_ = b.b.Finish()
		return
	}
	_ = b.b.Exit()
	fmt.Fprintln(b.w)
}

// ExitError ends the process with Code, printing Message first when it
// is not empty: a command that ran something in the container (exec)
// exits with that command's own status.
type ExitError struct {
	Code    int
	Message string
}

func (e *ExitError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("exit status %d", e.Code)
}
