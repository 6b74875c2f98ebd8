package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/platformtest"
)

// bin is the deckhand binary the tests drive (deckhand-display beside it
// for the display tests: DECKHAND_BIN=$PWD/bin after make build).
var bin string

func TestMain(m *testing.M) {
	platformtest.Main(m, &bin, "deckhand", "deckhand/agent/cmd/deckhand")
}

// Keys of the proxy permissions document the agents of these tests use:
// one may reach every program, one everything but exec.
const (
	allKey    = "all-key"
	noExecKey = "no-exec-key"
	permsDoc  = `{"project":"p","container":"c","enable_proxy":true,"groups":{
		"all":{"type":"token","header":"X-Key","value":"all-key"},
		"noexec":{"type":"token","header":"X-Key","value":"no-exec-key"}},
		"permissions":{"all":{"exec":true,"files":true,"services":true,"desktop":true},"noexec":{"files":true,"services":true}}}`
)

// agent is a running `deckhand run`.
type agent struct {
	cmd  *exec.Cmd
	gw   string // http://127.0.0.1:PORT, the gateway
	base int
	out  *platformtest.SyncBuffer
	done chan struct{}
}

// startAgent runs the agent with the services the tools call and the
// permissions document above.
func startAgent(t testing.TB, services string, extra ...string) *agent {
	t.Helper()
	return startAgentEnv(t, nil, services, extra...)
}

// startAgentEnv is startAgent with env added to the agent's environment.
func startAgentEnv(t testing.TB, env []string, services string, extra ...string) *agent {
	t.Helper()
	return startAgentDoc(t, permsDoc, env, services, extra...)
}

// startAgentDoc is startAgentEnv with another permissions document.
func startAgentDoc(t testing.TB, doc string, env []string, services string, extra ...string) *agent {
	t.Helper()
	perms := filepath.Join(t.TempDir(), "perms.json")
	if err := os.WriteFile(perms, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	base := platformtest.FreePortBase(t, 16)
	gw := "127.0.0.1:" + strconv.Itoa(base)
	args := append([]string{"run", "--data", t.TempDir(), "--listen", gw, "--port-base", strconv.Itoa(base),
		"--services", services, "--permissions-file", perms, "--log-level", "warn"}, extra...)
	a := &agent{cmd: exec.Command(bin, args...), gw: "http://" + gw, base: base, out: &platformtest.SyncBuffer{}, done: make(chan struct{})}
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DECKHAND_") && !strings.HasPrefix(kv, "DISPLAY=") {
			a.cmd.Env = append(a.cmd.Env, kv)
		}
	}
	a.cmd.Env = append(a.cmd.Env, env...)
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.done:
		case <-time.After(20 * time.Second):
			_ = a.cmd.Process.Kill()
			<-a.done
		}
	})
	health := "http://127.0.0.1:" + strconv.Itoa(base+16) + "/health"
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-a.done:
			t.Fatalf("the agent exited: %s", a.out)
		default:
		}
		if resp, err := http.Get(health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mcp service did not answer: %s", a.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// endpoint is the MCP endpoint through the gateway.
func (a *agent) endpoint() string { return a.gw + "/_/mcp/api/v1/mcp" }

// keyed adds the X-Key header and header to every request.
type keyed struct {
	key    string
	header http.Header
	next   http.RoundTripper
}

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Key", k.key)
	for name, v := range k.header {
		r.Header[name] = v
	}
	return k.next.RoundTrip(r)
}

// connect opens an MCP session through endpoint with key.
func connect(t testing.TB, endpoint, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectHeader(t, endpoint, key, nil, opts)
}

// dial opens an MCP session through endpoint with key and header.
func dial(endpoint, key string, header http.Header, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "deckhand-test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: keyed{key: key, header: header, next: &http.Transport{Proxy: nil}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Connect(ctx, tr, nil)
}

// connectHeader is connect with further headers.
func connectHeader(t testing.TB, endpoint, key string, header http.Header, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	s, err := dial(endpoint, key, header, opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func callTool(t *testing.T, s *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// A route's Text that names a member its answer lacks prints this.
	if txt := text(res); strings.Contains(txt, "<no value>") {
		t.Fatalf("%s: its text names a member the answer lacks: %s", name, txt)
	}
	return res
}

// structured decodes a result's structured content.
func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return v
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []string
	for tool, err := range s.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Description == "" || tool.Annotations == nil {
			t.Errorf("tool %s lacks a schema, description or annotations", tool.Name)
		}
		names = append(names, tool.Name)
	}
	return names
}

// TestToolsThroughTheGateway: the tools of operations.md are listed, run a
// command, write, edit and read a file, each through the gateway into the
// service that owns it; the journal records the calls without the
// contents.
func TestToolsThroughTheGateway(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "process,files,journal,mcp")
	s := connect(t, a.endpoint(), allKey, nil)
	names := toolNames(t, s)
	for _, want := range []string{"process_run", "files_read", "files_write", "files_list", "journal_query"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	// Only the tools of the services this agent runs are offered.
	for _, n := range names {
		if svc, _, _ := strings.Cut(n, "_"); !slices.Contains([]string{"process", "files", "journal", "mcp"}, svc) {
			t.Errorf("tools/list offers %s, whose service does not run", n)
		}
	}

	// A failing command is an error whose text says how it ended and
	// what it wrote to stderr: a model reads the text.
	res := callTool(t, s, "process_run", map[string]any{"cmd": []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	run := structured[struct {
		Stdout, Stderr string
		ExitCode       *int `json:"exit_code"`
	}](t, res)
	if !res.IsError || run.Stdout != "out\n" || run.Stderr != "err\n" || run.ExitCode == nil || *run.ExitCode != 3 ||
		text(res) != "out\n[stderr]\nerr\n[exit code 3]" {
		t.Fatalf("process_run of a failing command: isError %v %+v %q", res.IsError, run, text(res))
	}
	res = callTool(t, s, "process_run", map[string]any{"shell": "echo warning >&2; exit 0"})
	if res.IsError || text(res) != "[stderr]\nwarning\n" {
		t.Fatalf("process_run of a command that succeeds with stderr: isError %v %q", res.IsError, text(res))
	}
	res = callTool(t, s, "process_run", map[string]any{"cmd": []string{"sleep", "5"}, "timeout_ms": 100})
	if !res.IsError || !strings.Contains(text(res), "[timed out and stopped, exit code ") {
		t.Fatalf("process_run past its timeout: isError %v %q", res.IsError, text(res))
	}
	res = callTool(t, s, "process_run", map[string]any{"cmd": []string{"/nonexistent/program"}})
	if !res.IsError || !strings.HasPrefix(text(res), "failed to start: ") {
		t.Fatalf("process_run of a missing program: isError %v %q", res.IsError, text(res))
	}
	res = callTool(t, s, "process_run", map[string]any{"shell": "pwd", "cwd": "/tmp"})
	if got := structured[struct{ Stdout string }](t, res).Stdout; got != "/tmp\n" {
		t.Fatalf("process_run shell with cwd: %q", got)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "notes.txt")
	secret := "a secret line nobody logs"
	if res := callTool(t, s, "files_write", map[string]any{"path": path, "content": "alpha\n" + secret + "\nomega\n"}); res.IsError {
		t.Fatalf("files_write: %s", text(res))
	}
	if res := callTool(t, s, "files_edit", map[string]any{"path": path, "old_string": "alpha", "new_string": "ALPHA"}); res.IsError {
		t.Fatalf("files_edit: %s", text(res))
	}
	res = callTool(t, s, "files_read", map[string]any{"path": path})
	if want := "ALPHA\n" + secret + "\nomega\n"; text(res) != want {
		t.Fatalf("files_read: %q, want %q", text(res), want)
	}
	if raw, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(raw), "ALPHA\n") {
		t.Fatalf("on disk: %q %v", raw, err)
	}
	res = callTool(t, s, "files_edit", map[string]any{"path": path, "old_string": "not there", "new_string": "x"})
	if !res.IsError || !strings.Contains(text(res), "old_string") {
		t.Fatalf("an edit of a missing string: %v %q", res.IsError, text(res))
	}
	res = callTool(t, s, "files_list", map[string]any{"path": filepath.Join(dir, "sub")})
	if l := structured[struct{ Entries []struct{ Path string } }](t, res); len(l.Entries) != 1 || l.Entries[0].Path != path {
		t.Fatalf("files_list: %+v", l)
	}

	// Trimmed text says where to read on, and offset reads the rest.
	long := strings.Repeat("0123456789", 300)
	callTool(t, s, "files_write", map[string]any{"path": path, "content": long})
	res = callTool(t, s, "files_read", map[string]any{"path": path, "max_chars": 1000})
	page := structured[struct {
		Text       string
		NextOffset int `json:"next_offset"`
	}](t, res)
	if page.NextOffset != 1000 || !strings.HasPrefix(page.Text, long[:1000]) || !strings.Contains(page.Text, "offset=1000") {
		t.Fatalf("trimmed read: next %d, %q", page.NextOffset, page.Text[len(page.Text)-120:])
	}
	res = callTool(t, s, "files_read", map[string]any{"path": path, "offset": 2500})
	if text(res) != long[2500:] {
		t.Fatalf("read from offset: %q", text(res))
	}

	// The journal has the calls, the contents only as lengths.
	raw := journal(t, a, "source=mcp&limit=100", `"tool":"files_read"`)
	if !strings.Contains(raw, `"tool":"files_write"`) || !strings.Contains(raw, `"tool":"process_run"`) {
		t.Fatalf("the journal lacks the tool calls: %s", raw)
	}
	if strings.Contains(raw, secret) || strings.Contains(raw, "0123456789") {
		t.Fatalf("the journal holds a file's content: %s", raw)
	}
}

// journal reads the journal service's JSON lines through the gateway
// until want is in them (entries reach the journal asynchronously).
func journal(t *testing.T, a *agent, query, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		raw := journalOnce(t, a, query)
		if strings.Contains(raw, want) || time.Now().After(deadline) {
			return raw
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func journalOnce(t *testing.T, a *agent, query string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", a.gw+"/_/journal/api/v1/journal?format=json&"+query, nil)
	req.Header.Set("X-Key", allKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("journal: %d %s", resp.StatusCode, raw)
	}
	return string(raw)
}

// TestNoDisplayNoDisplayTools: an agent whose display service runs without
// a display (it answers unavailable) offers none of the display tools;
// one called anyway says UNAVAILABLE.
func TestNoDisplayNoDisplayTools(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "process,display,mcp")
	s := connect(t, a.endpoint(), allKey, nil)
	names := toolNames(t, s)
	if !slices.Contains(names, "process_run") {
		t.Errorf("tools/list lacks process_run: %v", names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "display_") || strings.HasPrefix(n, "files_") {
			t.Errorf("tools/list offers %s on an agent without a display or files", n)
		}
	}
	res := callTool(t, s, "display_screenshot", map[string]any{})
	if !res.IsError || !strings.Contains(text(res), "UNAVAILABLE") {
		t.Fatalf("display_screenshot without a display: %q", text(res))
	}
}

// TestWithoutExecNoProcessTools: a credential the proxy permissions do not
// allow exec sees no process tool and is refused when it calls one; its
// files tools work. Without desktop it sees the display's reading tools
// only, and display_type is refused naming program desktop.
func TestWithoutExecNoProcessTools(t *testing.T) {
	t.Parallel()
	// A display that runs, so its tools are listed at all.
	display := platformtest.StartXvfb(t, "1024x768x24")
	a := startAgentEnv(t, []string{"DISPLAY=" + display}, "process,files,journal,display,mcp", "--display", display)
	// The reach header is the gateway's: a client's copy is dropped.
	s := connectHeader(t, a.endpoint(), noExecKey, http.Header{"X-Deckhand-Identity-Reach": {"process,files"}}, nil)
	names := toolNames(t, s)
	for _, n := range names {
		if strings.HasPrefix(n, "process_") {
			t.Errorf("a credential without exec is shown %s", n)
		}
	}
	if !slices.Contains(names, "files_read") {
		t.Errorf("files tools missing: %v", names)
	}
	// Its services grant reads the screen but does not drive it: the
	// display's tools are judged by their routes' programs.
	for _, read := range []string{"display_screenshot", "display_screenshot_marked", "display_windows", "display_find",
		"display_accessibility", "display_recording_start", "display_recordings"} {
		if !slices.Contains(names, read) {
			t.Errorf("a services grant does not see %s: %v", read, names)
		}
	}
	for _, act := range []string{"display_type", "display_click", "display_element_click", "display_key"} {
		if slices.Contains(names, act) {
			t.Errorf("a services grant sees %s: %v", act, names)
		}
	}
	marker := filepath.Join(t.TempDir(), "ran")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "process_run", Arguments: map[string]any{"cmd": []string{"touch", marker}}})
	if err == nil || !strings.Contains(err.Error(), "FORBIDDEN") || !strings.Contains(err.Error(), "program exec") {
		t.Fatalf("process_run without exec: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused command ran")
	}
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "display_type", Arguments: map[string]any{"text": "id\n"}}); err == nil ||
		!strings.Contains(err.Error(), "FORBIDDEN") || !strings.Contains(err.Error(), "program desktop") {
		t.Fatalf("display_type with a services grant: %v", err)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "nosuch_tool", Arguments: map[string]any{}})
	if (err == nil && !res.IsError) || (err != nil && strings.Contains(err.Error(), "FORBIDDEN")) {
		t.Fatalf("an unknown tool: %v %v", res, err)
	}
	if res := callTool(t, s, "files_list", map[string]any{"path": "/"}); res.IsError {
		t.Fatalf("files_list: %s", text(res))
	}
	if raw := journal(t, a, "source=mcp&limit=100", `"outcome":"refused"`); !strings.Contains(raw, `"outcome":"refused"`) {
		t.Fatalf("the refusal is not in the journal: %s", raw)
	}

	// A trusted local user on the service's own port (this test runs as
	// root) did not come through the gateway, needs no credential and
	// reaches every service.
	direct := connect(t, "http://127.0.0.1:"+strconv.Itoa(a.base+16)+"/api/v1/mcp", "", nil)
	if names := toolNames(t, direct); !slices.Contains(names, "process_run") {
		t.Fatalf("a local caller on the service's port lacks process_run: %v", names)
	}

	// No credential: the gateway refuses before MCP.
	req, _ := http.NewRequest("POST", a.endpoint(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("no credential: %d", resp.StatusCode)
	}
}

// TestCrossSiteAndRebindingRefused: a cross-site Origin and a foreign Host
// (DNS rebinding) are refused at /_/mcp/ as on every route, with a valid
// credential.
func TestCrossSiteAndRebindingRefused(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "files,mcp")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	for _, tc := range []struct {
		name, origin, host string
		want               int
	}{
		{"same host", "", "", 200},
		{"cross-site origin", "https://evil.example", "", 403},
		{"rebinding host", "", "evil.example", 421},
		{"rebinding host and origin", "http://evil.example", "evil.example", 421},
	} {
		req, _ := http.NewRequest("POST", a.endpoint(), strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Key", allKey)
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, raw, tc.want)
		}
	}
}

// TestFileSubscription: a subscribed file's write through another client
// (and one straight to disk) arrives as notifications/resources/updated.
func TestFileSubscription(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "files,mcp")
	path := filepath.Join(t.TempDir(), "watched.txt")
	if err := os.WriteFile(path, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	uri := "file://" + path
	updated := make(chan string, 16)
	s := connect(t, a.endpoint(), allKey, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		updated <- r.Params.URI
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rr, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "v1" {
		t.Fatalf("read %s: %+v %v", uri, rr, err)
	}
	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	other := connect(t, a.endpoint(), allKey, nil)
	callTool(t, other, "files_write", map[string]any{"path": path, "content": "v2"})
	select {
	case got := <-updated:
		if got != uri {
			t.Fatalf("update for %s", got)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated after the write")
	}
	rr, err = s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || rr.Contents[0].Text != "v2" {
		t.Fatalf("read after the update: %+v %v", rr, err)
	}
}

// cutter is a proxy in front of the gateway that cuts the first tool
// call's event stream right after its first event (the priming event that
// carries an id), so the client must resume with Last-Event-ID.
type cutter struct {
	target *url.URL
	cut    atomic.Bool
	mu     sync.Mutex
	resume []string // Last-Event-ID of every GET
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if id := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && id != "" {
		c.mu.Lock()
		c.resume = append(c.resume, id)
		c.mu.Unlock()
	}
	p := httputil.NewSingleHostReverseProxy(c.target)
	p.FlushInterval = -1
	if r.Method == http.MethodPost && bytes.Contains(body, []byte(`"tools/call"`)) && c.cut.CompareAndSwap(false, true) {
		p.ModifyResponse = func(resp *http.Response) error {
			resp.Body = &cutBody{rc: resp.Body}
			return nil
		}
	}
	p.ServeHTTP(w, r)
}

// cutBody passes the first SSE event on, then fails.
type cutBody struct {
	rc   io.ReadCloser
	seen []byte
	done bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("cut")
	}
	n, err := b.rc.Read(p)
	b.seen = append(b.seen, p[:n]...)
	if i := bytes.Index(b.seen, []byte("\n\n")); i >= 0 {
		b.done = true
		keep := n - (len(b.seen) - (i + 2))
		return keep, nil
	}
	return n, err
}

func (b *cutBody) Close() error { return b.rc.Close() }

// TestResumeADroppedStream: a tool call's stream cut after its first
// event is resumed by the client with Last-Event-ID from the server's
// event store, and the call's answer arrives whole.
func TestResumeADroppedStream(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "process,mcp")
	target, _ := url.Parse(a.gw)
	c := &cutter{target: target}
	srv := &http.Server{Handler: c}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s := connect(t, "http://"+ln.Addr().String()+"/_/mcp/api/v1/mcp", allKey, nil)
	// The call's answer comes after the cut and well before the client's
	// first reconnect (at least a second later): a resume while the server
	// still holds the cut stream open is refused with 409 by the SDK, so the
	// call ends first and its answer is replayed from the event store.
	res := callTool(t, s, "process_run", map[string]any{"shell": "sleep 0.2; echo after-the-cut"})
	if got := structured[struct{ Stdout string }](t, res).Stdout; got != "after-the-cut\n" {
		t.Fatalf("result after the cut: %q (%s)", got, text(res))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.cut.Load() || len(c.resume) == 0 {
		t.Fatalf("the stream was not cut and resumed: cut %v, resumes %v", c.cut.Load(), c.resume)
	}
}

// decodePNG checks an image content decodes as a PNG and answers its width.
func decodePNG(t *testing.T, res *mcp.CallToolResult) int {
	t.Helper()
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			m, err := png.Decode(bytes.NewReader(img.Data))
			if err != nil {
				t.Fatalf("the screenshot does not decode: %v", err)
			}
			return m.Bounds().Dx()
		}
	}
	t.Fatalf("no image content: %s", text(res))
	return 0
}

// clickWindow is a GTK window that is one button: a click prints
// "clicked" and closes it.
const clickWindow = `
import gi, sys
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
w = Gtk.Window(title="mcp-click-test")
w.set_default_size(300, 200)
w.move(200, 150)
b = Gtk.Button(label="Press me")
def clicked(_):
    print("clicked", flush=True)
    Gtk.main_quit()
b.connect("clicked", clicked)
w.add(b)
w.connect("destroy", Gtk.main_quit)
w.show_all()
print("shown", flush=True)
Gtk.main()
`

// TestDisplayScreenshotAndClick: on a real Xvfb, the screenshot decodes
// at the width asked for, and a click at a real window's button (found
// with display_windows) presses it.
func TestDisplayScreenshotAndClick(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		t.Skip("deckhand-display is not beside deckhand (make build; DECKHAND_BIN=$PWD/bin)")
	}
	if exec.Command("/usr/bin/python3", "-c", `import gi; gi.require_version("Gtk", "3.0"); from gi.repository import Gtk`).Run() != nil {
		t.Skip("python3-gi with GTK 3 is not installed")
	}
	display := platformtest.StartXvfb(t, "1600x900x24")
	// Programs the process service starts get the agent's DISPLAY, and a
	// session bus of the test's own: GTK would otherwise autolaunch one
	// that outlives the test.
	env := append([]string{"DISPLAY=" + display}, platformtest.SessionBus(t)...)
	a := startAgentEnv(t, env, "process,files,display,mcp", "--display", display)
	s := connect(t, a.endpoint(), allKey, nil)

	res := callTool(t, s, "display_screenshot", map[string]any{"max_width": 800})
	if res.IsError {
		t.Fatalf("display_screenshot: %s", text(res))
	}
	if w := decodePNG(t, res); w != 800 {
		t.Fatalf("screenshot %d pixels wide, want 800 (scaled from 1600)", w)
	}
	if sh := structured[struct {
		ScreenWidth int `json:"screen_width"`
	}](t, res); sh.ScreenWidth != 1600 {
		t.Fatalf("screen width %d", sh.ScreenWidth)
	}

	script := filepath.Join(t.TempDir(), "click.py")
	if err := os.WriteFile(script, []byte(clickWindow), 0o644); err != nil {
		t.Fatal(err)
	}
	res = callTool(t, s, "process_start", map[string]any{"cmd": []string{"/usr/bin/python3", script}})
	id := structured[struct{ ID string }](t, res).ID
	if res.IsError || id == "" {
		t.Fatalf("process_start: %s", text(res))
	}
	type window struct {
		Name                string
		X, Y, Width, Height int
	}
	var win window
	deadline := time.Now().Add(60 * time.Second)
	for win.Width == 0 {
		if time.Now().After(deadline) {
			out := callTool(t, s, "process_output", map[string]any{"id": id})
			t.Fatalf("the window did not appear; its output: %s", text(out))
		}
		res = callTool(t, s, "display_windows", map[string]any{})
		for _, w := range structured[struct{ Windows []window }](t, res).Windows {
			if w.Name == "mcp-click-test" && w.Width > 0 {
				win = w
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The window is mapped before GTK draws the button; wait for its
	// "shown" line so the click lands on a live button.
	waitOutput(t, s, id, "shown")
	res = callTool(t, s, "display_click", map[string]any{"x": win.X + win.Width/2, "y": win.Y + win.Height/2})
	if res.IsError {
		t.Fatalf("display_click: %s", text(res))
	}
	waitOutput(t, s, id, "clicked")
}

// waitOutput reads process id's output with process_output until it holds
// want.
func waitOutput(t *testing.T, s *mcp.ClientSession, id, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out := callTool(t, s, "process_output", map[string]any{"id": id})
		if strings.Contains(text(out), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s never wrote %q: %s", id, want, text(out))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestNodeClient: the official TypeScript SDK's client (npm, lockfile in
// testdata/node) lists the tools, runs a command, edits a file and reads
// it back, and gets a subscribed file's update, through the gateway.
func TestNodeClient(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir, _ := filepath.Abs("testdata/node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skip("the TypeScript SDK is not installed: run `npm ci --prefix services/mcp/testdata/node` (scripts/setup.sh does)")
	}
	a := startAgent(t, "process,files,mcp")
	work := t.TempDir()
	cmd := exec.Command(node, "client.mjs", a.endpoint(), allKey, work)
	cmd.Dir = dir
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v %s", err, raw)
	}
	var got struct {
		Session bool
		Tools   []string
		Run     struct {
			Text, Stdout string
			ExitCode     int `json:"exit_code"`
		}
		EditError bool `json:"edit_error"`
		Read      string
		Updated   string
		Resource  string
		Error     string
	}
	if err := json.Unmarshal(bytes.TrimSpace(raw), &got); err != nil {
		t.Fatalf("node client's answer %s: %v", raw, err)
	}
	if got.Error != "" {
		t.Fatalf("node client: %s", got.Error)
	}
	path := filepath.Join(work, "node.txt")
	switch {
	case !got.Session:
		t.Error("no session id")
	case !slices.Contains(got.Tools, "process_run") || !slices.Contains(got.Tools, "files_read"):
		t.Errorf("tools %v", got.Tools)
	case got.Run.Text != "hello-node\n" || got.Run.Stdout != "hello-node\n" || got.Run.ExitCode != 0:
		t.Errorf("process_run %+v", got.Run)
	case got.EditError || got.Read != "one three\n":
		t.Errorf("edit then read: %v %q", got.EditError, got.Read)
	case got.Updated != "file://"+path || got.Resource != "four\n":
		t.Errorf("subscription: updated %q, then %q", got.Updated, got.Resource)
	}
}

// TestSessionsAreBounded: past --mcp-max-sessions a new session is
// refused with 503, and one that ends makes room.
func TestSessionsAreBounded(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "files,mcp", "--mcp-max-sessions", "2")
	first := connect(t, a.endpoint(), allKey, nil)
	connect(t, a.endpoint(), allKey, nil)
	if _, err := dial(a.endpoint(), allKey, nil, nil); err == nil || !strings.Contains(err.Error(), "503") && !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("a third session: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := connect(t, a.endpoint(), allKey, nil)
	if res := callTool(t, third, "mcp_ping", map[string]any{}); text(res) != "pong" {
		t.Fatalf("mcp_ping: %q", text(res))
	}
}

// TestVaultAndBindings: vault_put and vault_get go through the vault
// service (the value never reaches the journal), and tunnel_bindings lists
// the agent's own listening gateway port.
func TestVaultAndBindings(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "journal,vault,tunnel,mcp")
	s := connect(t, a.endpoint(), allKey, nil)
	if res := callTool(t, s, "vault_put", map[string]any{"key": "api", "value": map[string]any{"token": "v4ult-s3cret"}}); res.IsError {
		t.Fatalf("vault_put: %s", text(res))
	}
	res := callTool(t, s, "vault_get", map[string]any{"key": "api"})
	got := structured[struct {
		Value struct{ Token string }
	}](t, res)
	if res.IsError || got.Value.Token != "v4ult-s3cret" {
		t.Fatalf("vault_get: %s", text(res))
	}
	if raw := journal(t, a, "source=mcp&limit=100", `"tool":"vault_get"`); strings.Contains(raw, "v4ult-s3cret") {
		t.Fatalf("a vault value reached the journal: %s", raw)
	}
	res = callTool(t, s, "tunnel_bindings", map[string]any{})
	found := false
	for _, b := range structured[struct{ Bindings []struct{ Port int } }](t, res).Bindings {
		found = found || b.Port == a.base
	}
	if res.IsError || !found {
		t.Fatalf("tunnel_bindings lacks the gateway's port %d: %s", a.base, text(res))
	}
}

// TestIsolated: run as a child process of the agent (--isolate mcp), the
// service gets its peers' addresses from the agent and the gateway's
// judgement over the proxied connection.
func TestIsolated(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "process,files,mcp", "--isolate", "mcp")
	s := connect(t, a.endpoint(), noExecKey, nil)
	if names := toolNames(t, s); slices.Contains(names, "process_run") || !slices.Contains(names, "files_list") {
		t.Fatalf("isolated, a credential without exec is shown %v", names)
	}
	s = connect(t, a.endpoint(), allKey, nil)
	res := callTool(t, s, "process_run", map[string]any{"cmd": []string{"echo", "isolated"}})
	if got := structured[struct{ Stdout string }](t, res).Stdout; got != "isolated\n" {
		t.Fatalf("process_run: %q %s", got, text(res))
	}
}

// TestIsolatedService: the mcp service in the agent's process calls a
// service that runs as a child (--isolate) on its port.
func TestIsolatedService(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "process,files,mcp", "--isolate", "process")
	// The isolated service is its own process, up on its own time.
	health := "http://127.0.0.1:" + strconv.Itoa(a.base+15) + "/health"
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the isolated process service never answered: %s", a.out)
		}
	}
	s := connect(t, a.endpoint(), allKey, nil)
	res := callTool(t, s, "process_run", map[string]any{"cmd": []string{"echo", "child"}})
	if got := structured[struct{ Stdout string }](t, res).Stdout; got != "child\n" {
		t.Fatalf("process_run: %q %s", got, text(res))
	}
}

// TestDisplayElementClickClosesDialog: display_element_click on the Yes of
// a dialog that exits inside the click (as zenity's does) is a success
// that says the target closed, and the dialog's program exits 0.
func TestDisplayElementClickClosesDialog(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		t.Skip("deckhand-display is not beside deckhand (make build; DECKHAND_BIN=$PWD/bin)")
	}
	if exec.Command("/usr/bin/python3", "-c", `import gi; gi.require_version("Gtk", "3.0"); from gi.repository import Gtk`).Run() != nil {
		t.Skip("python3-gi with GTK 3 is not installed")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "display", "x11", "testdata", "a11y_dialog.py"))
	if err != nil {
		t.Fatal(err)
	}
	display := platformtest.StartXvfb(t, "1280x800x24")
	env := append([]string{"DISPLAY=" + display}, platformtest.SessionBus(t)...)
	a := startAgentEnv(t, env, "process,display,mcp", "--display", display)
	s := connect(t, a.endpoint(), allKey, nil)
	res := callTool(t, s, "process_start", map[string]any{"cmd": []string{"/usr/bin/python3", script, "mcp-dialog", "question"}})
	id := structured[struct{ ID string }](t, res).ID
	if res.IsError || id == "" {
		t.Fatalf("process_start: %s", text(res))
	}
	waitOutput(t, s, id, "ready")
	var yes string
	deadline := time.Now().Add(60 * time.Second)
	for yes == "" {
		if time.Now().After(deadline) {
			t.Fatalf("display_find never found Yes: %s", text(res))
		}
		res = callTool(t, s, "display_find", map[string]any{"role": "push button", "name": "yes"})
		for _, e := range structured[struct{ Elements []struct{ ID, Name string } }](t, res).Elements {
			if e.Name == "Yes" {
				yes = e.ID
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	res = callTool(t, s, "display_element_click", map[string]any{"element_id": yes})
	if res.IsError || !structured[struct {
		TargetClosed bool `json:"target_closed"`
	}](t, res).TargetClosed || !strings.Contains(text(res), "closed") {
		t.Fatalf("display_element_click on Yes: isError %v %s", res.IsError, text(res))
	}
	waitOutput(t, s, id, "response ok")
	for {
		res = callTool(t, s, "process_output", map[string]any{"id": id})
		out := structured[struct {
			State    string
			ExitCode *int `json:"exit_code"`
		}](t, res)
		if out.State != "running" {
			if out.State != "exited" || out.ExitCode == nil || *out.ExitCode != 0 {
				t.Fatalf("the dialog ended %s %v, want exit 0", out.State, out.ExitCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dialog never exited")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// a11yWindow is a GTK window with a text field and a button: a click
// prints "clicked" and the field's text, and renames the button "Done".
// It stays open: an application that quits inside the click never
// answers the accessibility bus's DoAction.
const a11yWindow = `
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
w = Gtk.Window(title="mcp-a11y-test")
w.set_default_size(300, 200)
w.move(200, 150)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
e = Gtk.Entry()
b = Gtk.Button(label="Press me")
def clicked(_):
    print("clicked", e.get_text(), flush=True)
    b.set_label("Done")
b.connect("clicked", clicked)
box.pack_start(e, False, False, 0)
box.pack_start(b, True, True, 0)
w.add(box)
w.connect("destroy", Gtk.main_quit)
w.show_all()
print("shown", flush=True)
Gtk.main()
`

// TestDisplayAccessibility: on a real Xvfb with a GTK window on a private
// session bus, display_find finds its button, display_accessibility and
// display_screenshot_marked list it, display_element_set_value fills its
// text field and display_element_click presses the button by id.
func TestDisplayAccessibility(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		t.Skip("deckhand-display is not beside deckhand (make build; DECKHAND_BIN=$PWD/bin)")
	}
	if exec.Command("/usr/bin/python3", "-c", `import gi; gi.require_version("Gtk", "3.0"); from gi.repository import Gtk`).Run() != nil {
		t.Skip("python3-gi with GTK 3 is not installed")
	}
	display := platformtest.StartXvfb(t, "1600x900x24")
	env := append([]string{"DISPLAY=" + display}, platformtest.SessionBus(t)...)
	a := startAgentEnv(t, env, "process,display,mcp", "--display", display)
	s := connect(t, a.endpoint(), allKey, nil)
	names := toolNames(t, s)
	for _, want := range []string{"display_accessibility", "display_find", "display_element_click", "display_element_set_value",
		"display_element_focus", "display_element_action", "display_element_scroll_into_view", "display_screenshot_marked",
		"display_recording_start", "display_recording_stop", "display_recordings", "display_recording_timeline"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s", want)
		}
	}

	script := filepath.Join(t.TempDir(), "a11y.py")
	if err := os.WriteFile(script, []byte(a11yWindow), 0o644); err != nil {
		t.Fatal(err)
	}
	res := callTool(t, s, "process_start", map[string]any{"cmd": []string{"/usr/bin/python3", script}})
	id := structured[struct{ ID string }](t, res).ID
	if res.IsError || id == "" {
		t.Fatalf("process_start: %s", text(res))
	}
	waitOutput(t, s, id, "shown")

	type element struct {
		ID, Role, Name string
		Depth          int
	}
	var button element
	deadline := time.Now().Add(60 * time.Second)
	for button.ID == "" {
		if time.Now().After(deadline) {
			t.Fatalf("display_find never found the button: %s", text(res))
		}
		res = callTool(t, s, "display_find", map[string]any{"role": "push button", "name": "press me"})
		if res.IsError {
			t.Fatalf("display_find: %s", text(res))
		}
		for _, e := range structured[struct{ Elements []element }](t, res).Elements {
			if e.Name == "Press me" {
				button = e
			}
		}
		time.Sleep(100 * time.Millisecond)
	}

	res = callTool(t, s, "display_accessibility", map[string]any{"scope": "all", "role": "push button"})
	if res.IsError || !strings.Contains(text(res), button.ID) {
		t.Fatalf("display_accessibility lacks the button %s: %s", button.ID, text(res))
	}
	tree := structured[struct{ Elements []element }](t, res).Elements
	if i := slices.IndexFunc(tree, func(e element) bool { return e.ID == button.ID }); i < 0 || tree[i].Depth == 0 {
		t.Fatalf("the flattened tree lacks the button below its window: %+v", tree)
	}

	res = callTool(t, s, "display_screenshot_marked", map[string]any{"scope": "all"})
	if res.IsError {
		t.Fatalf("display_screenshot_marked: %s", text(res))
	}
	decodePNG(t, res)
	marks := structured[struct {
		Marks []struct {
			N         int
			ElementID string `json:"element_id"`
		}
	}](t, res).Marks
	if !slices.ContainsFunc(marks, func(m struct {
		N         int
		ElementID string `json:"element_id"`
	}) bool {
		return m.ElementID == button.ID && m.N > 0
	}) {
		t.Fatalf("no mark for the button %s: %+v", button.ID, marks)
	}

	res = callTool(t, s, "display_element_set_value", map[string]any{"element_id": "not an id", "value": "x"})
	// Over HTTP (the display runs as a child) the id is escaped once.
	if !res.IsError || !strings.Contains(text(res), "elementId") || !strings.Contains(text(res), `got "not%20an%20id"`) {
		t.Fatalf("a bad element id: %v %s", res.IsError, text(res))
	}

	res = callTool(t, s, "display_find", map[string]any{"role": "text", "scope": "all"})
	fields := structured[struct{ Elements []element }](t, res).Elements
	if len(fields) != 1 {
		t.Fatalf("display_find role=text: %s", text(res))
	}
	// What follows is recorded: the timeline must hold the element actions.
	res = callTool(t, s, "display_recording_start", map[string]any{"max_seconds": 120})
	recID := structured[struct{ ID string }](t, res).ID
	if res.IsError || recID == "" {
		t.Fatalf("display_recording_start: %s", text(res))
	}
	res = callTool(t, s, "display_element_focus", map[string]any{"element_id": fields[0].ID})
	if res.IsError || structured[struct{ Method string }](t, res).Method != "focus" {
		t.Fatalf("display_element_focus: %s", text(res))
	}
	res = callTool(t, s, "display_element_set_value", map[string]any{"element_id": fields[0].ID, "value": "hello there"})
	if res.IsError || structured[struct{ Element struct{ Value string } }](t, res).Element.Value != "hello there" {
		t.Fatalf("display_element_set_value: %s", text(res))
	}

	res = callTool(t, s, "display_element_click", map[string]any{"element_id": button.ID})
	if res.IsError {
		t.Fatalf("display_element_click: %s", text(res))
	}
	waitOutput(t, s, id, "clicked hello there")
	res = callTool(t, s, "display_recording_stop", map[string]any{"id": recID})
	if res.IsError || structured[struct{ Status string }](t, res).Status != "stopped" {
		t.Fatalf("display_recording_stop: %s", text(res))
	}
	res = callTool(t, s, "display_recording_timeline", map[string]any{"id": recID})
	var actions []string
	for _, st := range structured[struct{ Events []struct{ Action string } }](t, res).Events {
		actions = append(actions, st.Action)
	}
	if res.IsError || len(actions) < 3 {
		t.Fatalf("the timeline holds %v, want the focus, the value and the click: %s", actions, text(res))
	}
	res = callTool(t, s, "display_recordings", map[string]any{})
	if res.IsError || !strings.Contains(text(res), recID) {
		t.Fatalf("display_recordings lacks %s: %s", recID, text(res))
	}
	res = callTool(t, s, "display_find", map[string]any{"role": "push button", "name": "done"})
	if got := structured[struct{ Elements []element }](t, res).Elements; len(got) != 1 || got[0].ID != button.ID {
		t.Fatalf("after the click the button is not named Done: %s", text(res))
	}
	callTool(t, s, "process_signal", map[string]any{"id": id, "signal": "KILL"})
}

// TestNotesAndMemory: through the gateway, notes_write creates a note that
// notes_read answers, a stale version is refused, and the workspace_memory
// tools write, list and read a block; a value over its limit is refused.
func TestNotesAndMemory(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "files,notes,workspace,mcp")
	s := connect(t, a.endpoint(), allKey, nil)
	names := toolNames(t, s)
	for _, want := range []string{"notes_read", "notes_write", "notes_list", "workspace_memory_list", "workspace_memory_read", "workspace_memory_write"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s", want)
		}
	}

	note := map[string]any{"notebook": "nb1", "node": "plan", "title": "Plan", "version": 0,
		"blocks": []map[string]any{{"id": "h", "type": "heading", "level": 1, "text": "Steps"},
			{"id": "l", "type": "list", "items": []string{"build", "test"}}}}
	res := callTool(t, s, "notes_write", note)
	if res.IsError {
		t.Fatalf("notes_write: %s", text(res))
	}
	if v := structured[struct{ Version int64 }](t, res).Version; v != 1 {
		t.Fatalf("a new note at version %d", v)
	}
	res = callTool(t, s, "notes_read", map[string]any{"notebook": "nb1", "node": "plan"})
	if res.IsError || !strings.Contains(text(res), "- test") || !strings.Contains(text(res), "Steps") {
		t.Fatalf("notes_read: %s", text(res))
	}
	if d := structured[struct {
		Title  string
		Blocks []struct{ ID string }
	}](t, res); d.Title != "Plan" || len(d.Blocks) != 2 {
		t.Fatalf("notes_read answered %+v", d)
	}
	res = callTool(t, s, "notes_write", note) // version 0 again: the note exists
	if !res.IsError || !strings.Contains(text(res), "version") {
		t.Fatalf("a stale version was not refused: %s", text(res))
	}
	res = callTool(t, s, "notes_list", map[string]any{"notebook": "nb1"})
	if l := structured[struct {
		Nodes []struct {
			NotebookID string `json:"notebook_id"`
			NodeID     string `json:"node_id"`
			Title      string
			Blocks     int
		}
		Next string
	}](t, res); res.IsError || len(l.Nodes) != 1 || l.Nodes[0].NodeID != "plan" || l.Nodes[0].Blocks != 2 || l.Next != "" ||
		!strings.Contains(text(res), "nb1/plan") {
		t.Fatalf("notes_list: %s %+v", text(res), l)
	}
	res = callTool(t, s, "notes_list", map[string]any{"after": "no-slash"})
	if !res.IsError || !strings.Contains(text(res), "after") {
		t.Fatalf("notes_list with a bad after: %s", text(res))
	}
	res = callTool(t, s, "notes_read", map[string]any{"notebook": "nb1", "node": ""})
	if !res.IsError || !strings.Contains(text(res), "INVALID: argument node: is required") {
		t.Fatalf("an empty node: %s", text(res))
	}

	res = callTool(t, s, "workspace_memory_write", map[string]any{"workspace": "w1", "label": "persona", "value": "terse", "description": "how to talk"})
	if res.IsError {
		t.Fatalf("workspace_memory_write: %s", text(res))
	}
	res = callTool(t, s, "workspace_memory_list", map[string]any{"workspace": "w1"})
	if bs := structured[MemoryBlocksView](t, res).Blocks; res.IsError || len(bs) != 1 || bs[0].Label != "persona" || bs[0].Value != "terse" {
		t.Fatalf("workspace_memory_list: %s", text(res))
	}
	res = callTool(t, s, "workspace_memory_read", map[string]any{"workspace": "w1", "label": "persona"})
	if res.IsError || text(res) != "terse" {
		t.Fatalf("workspace_memory_read: %s", text(res))
	}
	res = callTool(t, s, "workspace_memory_write", map[string]any{"workspace": "w1", "label": "persona", "value": "way too long", "limit": 3})
	if !res.IsError || !strings.Contains(text(res), "value") {
		t.Fatalf("a value over its limit: %s", text(res))
	}

}

// MemoryBlocksView is workspace_memory_list's structured content.
type MemoryBlocksView struct {
	Blocks []struct{ Label, Value string }
}
