package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/mcpserver"
)

func (s *Service) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "file", Title: "A file of the container",
		URITemplate: "file:///{+path}", Description: "A file by its absolute path: text, or an image as a blob. Subscribe to " +
			"get notifications/resources/updated when it is written, created, removed or renamed."}, s.readFileResource)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "process-output", Title: "A process's output",
		URITemplate: "process://{id}/output", MIMEType: "text/plain",
		Description: "The output of a process started through process_run or process_start (both streams as written), " +
			"the first --mcp-output-budget characters; process_output reads any part of it."}, s.readProcessResource)
	srv.AddResource(&mcp.Resource{Name: "journal", Title: "The agent's journal", URI: "journal://recent", MIMEType: "text/plain",
		Description: "The newest 100 entries of the agent's journal in short text form."}, s.readJournalResource)
}

// resourceOf is the service a resource URI reads and the tool that reads
// the same thing: a caller whose allow-list leaves the tool out may not
// read, list or subscribe to the resource either (file:// is files_read,
// process://ID/output process_output, journal:// journal_query). An
// unknown scheme has no tool: the SDK says there is no such resource.
func resourceOf(uri string) (service, tool string) {
	scheme, _, _ := strings.Cut(uri, ":")
	switch scheme {
	case "file":
		return "files", "files_read"
	case "process":
		return "process", "process_output"
	case "journal":
		return "journal", "journal_query"
	}
	return scheme, ""
}

// filePath is the absolute path a file:// URI names.
func filePath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !path.IsAbs(u.Path) {
		return "", fault.Invalid("uri", "must be file:///ABSOLUTE/PATH")
	}
	return path.Clean(u.Path), nil
}

func (s *Service) readFileResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	p, err := filePath(req.Params.URI)
	if err != nil {
		return nil, err
	}
	f, err := mcpserver.RunTool[fileText](ctx, s.srv, mcpserver.CallerOf(req.Extra), "files_read", map[string]any{"path": p})
	if err != nil {
		var pe *fault.Error
		if errors.As(err, &pe) && pe.Code == fault.CodeNotFound {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return nil, mcpserver.ToolError(err)
	}
	c := &mcp.ResourceContents{URI: req.Params.URI, MIMEType: f.MimeType, Text: f.Text, Blob: f.Data}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

func (s *Service) readProcessResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	u, err := url.Parse(req.Params.URI)
	if err != nil || u.Scheme != "process" || u.Host == "" || u.Path != "/output" {
		return nil, fault.Invalid("uri", "must be process://ID/output")
	}
	return s.textResource(ctx, req, "process_output", map[string]any{"id": u.Host, "max_chars": s.set.OutputBudget})
}

func (s *Service) readJournalResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return s.textResource(ctx, req, "journal_query", map[string]any{"limit": 100})
}

// textResource reads the resource as the text tool answers for args.
func (s *Service) textResource(ctx context.Context, req *mcp.ReadResourceRequest, tool string, args map[string]any) (*mcp.ReadResourceResult, error) {
	out, err := mcpserver.RunTool[struct{ Text string }](ctx, s.srv, mcpserver.CallerOf(req.Extra), tool, args)
	if err != nil {
		return nil, mcpserver.ToolError(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: out.Text}}}, nil
}

// subscriptions feed resources/updated from the files service's watch:
// one watch of a subscribed file's directory (not recursive) per cleaned
// path, while any session is subscribed to it under any spelling of its
// URI (file:///a/./b and file:///a/b#x share the watch, and each spelling
// is told). A session's subscriptions are capped (--mcp-max-subscriptions,
// every spelling counts) and end with the session (Options.Ended), so
// sessions that come and go leave no watches behind.
type subscriptions struct {
	s    *Service
	max  int
	mu   sync.Mutex
	byID map[string]map[string]string // session id → subscribed URI (as spelled) → its cleaned path
	// watches are by cleaned path.
	watches map[string]*watch
	wg      sync.WaitGroup
}

type watch struct {
	uris   map[string]int // each spelling subscribed → how many sessions use it
	cancel context.CancelFunc
}

func newSubscriptions(s *Service, max int) *subscriptions {
	return &subscriptions{s: s, max: max, byID: map[string]map[string]string{}, watches: map[string]*watch{}}
}

// watchReady bounds how long a subscribe waits for its watch to start.
const watchReady = 15 * time.Second

// codeLimit is the JSON-RPC error code of a refusal past a limit.
const codeLimit = -32004

func (u *subscriptions) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	p, err := filePath(req.Params.URI)
	if err != nil {
		return err
	}
	uri, id := req.Params.URI, req.Session.ID()
	u.mu.Lock()
	// The server tells end of the session even when it has ended already,
	// once u.mu is free.
	u.s.srv.Track(req.Session)
	uris := u.byID[id]
	if uris == nil {
		uris = map[string]string{}
		u.byID[id] = uris
	}
	if _, dup := uris[uri]; dup {
		u.mu.Unlock()
		return nil
	}
	if len(uris) >= u.max {
		u.mu.Unlock()
		return &jsonrpc.Error{Code: codeLimit, Message: fmt.Sprintf("TOO_MANY_SUBSCRIPTIONS: this session already holds %d file "+
			"subscriptions, the most --mcp-max-subscriptions allows (each URI spelling counts); unsubscribe one first", u.max)}
	}
	uris[uri] = p
	if w, ok := u.watches[p]; ok {
		w.uris[uri]++
		u.mu.Unlock()
		return nil
	}
	wctx, cancel := context.WithCancel(u.s.srv.Context())
	w := &watch{uris: map[string]int{uri: 1}, cancel: cancel}
	u.watches[p] = w
	u.mu.Unlock()
	ready := make(chan error, 1)
	u.wg.Go(func() { u.follow(wctx, mcpserver.CallerOf(req.Extra), w, p, ready) })
	select {
	case err := <-ready:
		if err != nil {
			u.drop(uri, id)
			return mcpserver.ToolError(err)
		}
		return nil
	case <-ctx.Done():
		u.drop(uri, id)
		return ctx.Err()
	case <-time.After(watchReady):
		u.drop(uri, id)
		return mcpserver.ToolError(&fault.Error{Code: fault.CodeTimeout, Message: "the files service's watch did not start"})
	}
}

func (u *subscriptions) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	u.drop(req.Params.URI, req.Session.ID())
	return nil
}

// drop ends a session's subscription to uri.
func (u *subscriptions) drop(uri, id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p, ok := u.byID[id][uri]; ok {
		delete(u.byID[id], uri)
		u.release(p, uri)
	}
}

// end drops an ended session's subscriptions.
func (u *subscriptions) end(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for uri, p := range u.byID[id] {
		u.release(p, uri)
	}
	delete(u.byID, id)
}

// counts are the sessions with subscriptions or open, the watches and the
// subscriptions of the sessions.
func (u *subscriptions) counts() (sessions, watches, subs int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, uris := range u.byID {
		subs += len(uris)
	}
	return max(len(u.byID), u.s.srv.Sessions()), len(u.watches), subs
}

// release takes one session's use of uri off the watch of p, and ends the
// watch with its last. u.mu is held.
func (u *subscriptions) release(p, uri string) {
	w, ok := u.watches[p]
	if !ok {
		return
	}
	if w.uris[uri]--; w.uris[uri] <= 0 {
		delete(w.uris, uri)
	}
	if len(w.uris) == 0 {
		w.cancel()
		delete(u.watches, p)
	}
}

// spellings are the URIs sessions subscribed to w under.
func (u *subscriptions) spellings(w *watch) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Collect(maps.Keys(w.uris))
}

func (u *subscriptions) close() {
	u.mu.Lock()
	for p, w := range u.watches {
		w.cancel()
		delete(u.watches, p)
	}
	u.mu.Unlock()
	u.wg.Wait()
}

// follow reads the watch of p's directory until ctx ends, resuming after
// the last event it saw when the stream drops, and tells subscribers of w
// about every event on p. ready gets nil once the first stream is ready,
// or why it could not start.
func (u *subscriptions) follow(ctx context.Context, who mcpserver.Caller, w *watch, p string, ready chan<- error) {
	var since uint64
	started := false
	for delay := 100 * time.Millisecond; ctx.Err() == nil; delay = min(2*delay, 5*time.Second) {
		q := url.Values{"path": {path.Dir(p)}, "recursive": {"false"}}
		if started {
			q.Set("since", strconv.FormatUint(since, 10))
		}
		resp, err := u.s.be.Do(ctx, platform.ServiceCall{Method: http.MethodGet, Service: "files", Path: "/api/v1/files/watch", Query: q,
			Header: who.Forward(http.Header{"Accept": {"text/event-stream"}})})
		if err != nil {
			if !started {
				ready <- err
				return
			}
		} else {
			n := u.read(ctx, resp, w, p, &since, func() {
				if !started {
					started = true
					ready <- nil
				}
			})
			resp.Body.Close()
			if n > 0 {
				delay = 100 * time.Millisecond
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

// read parses one watch stream; it answers how many events it read.
func (u *subscriptions) read(ctx context.Context, resp *http.Response, w *watch, p string, since *uint64, onReady func()) int {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var event, data string
	n := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			data = strings.TrimSpace(line[len("data:"):])
		case line == "":
			switch event {
			case "ready":
				var r struct {
					Seq uint64 `json:"seq"`
				}
				if json.Unmarshal([]byte(data), &r) == nil && *since == 0 {
					*since = r.Seq
				}
				onReady()
			case "create", "write", "remove", "rename", "chmod":
				var e struct {
					Seq  uint64
					Path string
				}
				if json.Unmarshal([]byte(data), &e) == nil {
					*since = max(*since, e.Seq)
					n++
					if path.Clean(e.Path) == p {
						for _, uri := range u.spellings(w) {
							_ = u.s.srv.SDK().ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
						}
					}
				}
			}
			event, data = "", ""
		}
	}
	return n
}
