package platform

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
)

// ServiceClient calls the agent's services on their loopback ports
// (host:base+offset): what a service that acts for its caller reaches of
// a service in another process, where that service's own server judges
// and limits the request as any local caller's.
type ServiceClient struct {
	host    string
	base    int
	offsets map[string]int
	client  *http.Client
}

// NewServiceClient reaches the services of offsets (the agent's registry,
// contract.ServiceDeps.Offsets) at host (an unspecified address means
// 127.0.0.1) from port base.
func NewServiceClient(host string, base int, offsets map[string]int) *ServiceClient {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 64, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
		DisableCompression: true}
	return &ServiceClient{host: host, base: base, offsets: offsets, client: &http.Client{Transport: tr}}
}

// Close drops the idle connections.
func (c *ServiceClient) Close() { c.client.CloseIdleConnections() }

// ServiceCall is one request to a service. Body is JSON-encoded unless it
// is an io.Reader (sent as is) or nil; Header carries the caller's
// identity headers among others.
type ServiceCall struct {
	// Path is as on the wire: a part that is data (a route tool's path
	// argument) is escaped in it (url.PathEscape), and travels so.
	Method, Service, Path string
	Query                 url.Values
	Body                  any
	Header                http.Header
}

// Do sends sc and answers the response of a 2xx (or 304); anything else
// is the service's own error (its code and message, as a direct caller
// gets them), and a service that does not answer is UNAVAILABLE.
func (c *ServiceClient) Do(ctx context.Context, sc ServiceCall) (*http.Response, error) {
	rd, raw := sc.Body.(io.Reader)
	if !raw && sc.Body != nil {
		b, err := json.Marshal(sc.Body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	path, err := url.PathUnescape(sc.Path)
	if err != nil {
		return nil, fault.Invalid("path", "%s", err.Error())
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(c.host, strconv.Itoa(c.base+c.offsets[sc.Service])), Path: path,
		RawPath: sc.Path, RawQuery: sc.Query.Encode()}
	req, err := http.NewRequestWithContext(ctx, sc.Method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	maps.Copy(req.Header, sc.Header)
	if sc.Body != nil && !raw {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &fault.Error{Code: fault.CodeUnavailable, Details: sc.Service,
			Message: "the " + sc.Service + " service did not answer (is it running on this agent?)"}
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotModified {
		defer resp.Body.Close()
		var e struct{ Code, Details, Message string }
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(body, &e) != nil || e.Code == "" {
			return nil, &fault.Error{Code: fault.CodeBackend, Details: sc.Service,
				Message: fmt.Sprintf("the %s service answered %d", sc.Service, resp.StatusCode)}
		}
		return nil, &fault.Error{Code: e.Code, Details: e.Details, Message: e.Message}
	}
	return resp, nil
}

// JSON sends sc and decodes a JSON answer into out (nil: drop it).
func (c *ServiceClient) JSON(ctx context.Context, sc ServiceCall, out any) error {
	resp, err := c.Do(ctx, sc)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("the %s service's answer did not decode: %w", sc.Service, err)
		}
	}
	// Read to the end, so the connection is reused: a new one costs the
	// service a look-up of its peer's owner (reqpolicy.LocalTrust).
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}

// Bytes sends sc and reads at most limit bytes of the answer.
func (c *ServiceClient) Bytes(ctx context.Context, sc ServiceCall, limit int64) ([]byte, error) {
	resp, err := c.Do(ctx, sc)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err == nil && int64(len(raw)) > limit {
		err = &fault.Error{Code: fault.CodePayloadTooLarge, Details: sc.Service, Message: fmt.Sprintf("the answer is over %d bytes", limit)}
	}
	return raw, err
}

// RouteTool is a route that is a tool (Tool) as a caller reads it from
// its service's OpenAPI document: the tool as tools/list shows it (the
// operation's ToolExtension) and how its arguments make the route's
// request when the service runs in another process.
type RouteTool struct {
	Service, Name string
	// Doc is {name, title, description, annotations, inputSchema,
	// outputSchema}.
	Doc          json.RawMessage
	method, path string
	params       map[string]toolParam // by argument name
	body         bool                 // the operation reads a JSON body
}

// toolParam is a parameter of a route tool's request: its name there and
// where it goes (path, query or header).
type toolParam struct{ name, in string }

// Request is the method and path template of t's route, as its OpenAPI
// document names them: what proxy permissions judge a call of it by.
func (t *RouteTool) Request() (method, path string) { return t.method, t.path }

// ReadTools reads the route tools of service from its OpenAPI document.
func ReadTools(service string, openapiJSON []byte) ([]*RouteTool, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return nil, err
	}
	var out []*RouteTool
	for path, item := range doc.Paths {
		for method, rawOp := range item {
			var op struct {
				Parameters []struct{ Name, In string } `json:"parameters"`
				Body       json.RawMessage             `json:"requestBody"`
				Tool       json.RawMessage             `json:"x-mcp-tool"`
			}
			var face struct {
				Name   string            `json:"name"`
				Params map[string]string `json:"x-parameters"` // argument name: parameter name
			}
			if json.Unmarshal(rawOp, &op) != nil || op.Tool == nil || json.Unmarshal(op.Tool, &face) != nil {
				continue
			}
			t := &RouteTool{Service: service, Name: face.Name, Doc: op.Tool, method: strings.ToUpper(method), path: path,
				params: map[string]toolParam{}, body: op.Body != nil}
			args := map[string]string{} // parameter name: argument name
			for a, p := range face.Params {
				args[p] = a
			}
			for _, p := range op.Parameters {
				t.params[cmp.Or(args[p.Name], p.Name)] = toolParam{name: p.Name, in: p.In}
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// CallTool runs t's operation as its route's request on its service's
// port with header (the caller's identity): each argument that is a
// parameter goes where the parameter goes, the others make the JSON body.
// The service binds and checks them as Host.CallTool does in memory.
func (c *ServiceClient) CallTool(ctx context.Context, t *RouteTool, header http.Header, args map[string]json.RawMessage) (json.RawMessage, error) {
	sc := ServiceCall{Method: t.method, Service: t.Service, Path: t.path, Query: url.Values{}, Header: header.Clone()}
	if sc.Header == nil {
		sc.Header = http.Header{}
	}
	body := map[string]json.RawMessage{}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		p, isParam := t.params[name]
		if !isParam {
			if !t.body {
				return nil, fault.Invalid(name, "is not an argument of this tool")
			}
			body[name] = args[name]
			continue
		}
		v, err := argText(args[name])
		if err != nil {
			return nil, fault.Invalid(name, "must be a string, a number or a boolean")
		}
		switch p.in {
		case "path":
			sc.Path = strings.Replace(sc.Path, "{"+p.name+"}", url.PathEscape(v), 1)
		case "header":
			sc.Header.Set(p.name, v)
		default:
			sc.Query.Set(p.name, v)
		}
	}
	if i := strings.IndexByte(sc.Path, '{'); i >= 0 {
		name, _, _ := strings.Cut(sc.Path[i+1:], "}")
		for a, p := range t.params {
			if p.in == "path" && p.name == name {
				name = a // as the tool names it
			}
		}
		return nil, fault.Invalid(name, "is required")
	}
	if t.body {
		sc.Body = body
	}
	var out json.RawMessage
	if err := c.JSON(ctx, sc, &out); err != nil {
		return nil, err
	}
	return out, nil
}
