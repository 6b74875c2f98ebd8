package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/fault"
)

type item struct {
	Name  string `json:"name" required:"true" minLength:"2" maxLength:"8"`
	Color string `json:"color,omitempty" enum:"red,blue"`
	Size  *int   `json:"size,omitempty" minimum:"1" maximum:"9"`
}

type thingBody struct {
	Title string  `json:"title" pattern:"^[a-z]+$"`
	Items []item  `json:"items" required:"true" maxItems:"3"`
	Score float64 `json:"score" exclusiveMinimum:"0" maximum:"1"`
}

func (b *thingBody) Validate() error {
	if b.Title == "forbidden" {
		return fault.Invalid("title", "is forbidden")
	}
	return nil
}

type thingRef struct {
	Shelf string `path:"shelf" doc:"the shelf" enum:"top,bottom"`
	ID    int64  `path:"id" minimum:"1"`
}

// ValidateParams runs before the body is read.
func (r *thingRef) ValidateParams() error {
	if r.ID == 13 {
		return fault.Invalid("id", "is unlucky")
	}
	return nil
}

type putThing struct {
	thingRef
	IfMatch string  `header:"If-Match" doc:"the version"`
	DryRun  bool    `query:"dry_run" default:"false"`
	Limit   *uint16 `query:"limit" maximum:"500"`
	Body    thingBody
}

// Validate runs after the body's own.
func (p *putThing) Validate() error {
	if p.IfMatch == "stale" {
		return fault.Errorf(fault.CodePreconditionFailed, "If-Match: stale")
	}
	return nil
}

// Thing is what the test operations answer.
type Thing struct {
	Shelf   string    `json:"shelf" required:"true"`
	ID      int64     `json:"id" required:"true"`
	DryRun  bool      `json:"dry_run" required:"true"`
	Limit   *uint16   `json:"limit"`
	IfMatch string    `json:"if_match" required:"true"`
	Body    thingBody `json:"body" required:"true"`
	Peer    string    `json:"peer,omitempty"`
}

type thingReply struct {
	ETag   string `header:"ETag" doc:"the new version"`
	Status int
	Body   Thing
}

type rawIn struct {
	Name string `path:"name"`
	Body []byte
}

type rawOut struct {
	Disposition string `header:"Content-Disposition"`
	Body        []byte
}

type peerIn struct {
	Peer platform.Peer
}

type transfer struct {
	Amount string `json:"amount" required:"true"`
}

// Health shares its name with platform.Health, which every host's /health
// answers: the document must keep both.
type Health struct {
	Mood string `json:"mood"`
}

func bindRoutes() []platform.Route {
	put := func(_ context.Context, in putThing) (thingReply, error) {
		st := 0
		if in.DryRun {
			st = http.StatusOK
		}
		return thingReply{ETag: `"2"`, Status: st,
			Body: Thing{Shelf: in.Shelf, ID: in.ID, DryRun: in.DryRun, Limit: in.Limit, IfMatch: in.IfMatch, Body: in.Body}}, nil
	}
	return []platform.Route{
		{Method: http.MethodPut, Path: "/api/v1/shelves/{shelf}/things/{id}", OperationID: "putThing", Summary: "put a thing",
			Status: http.StatusCreated, Statuses: []int{http.StatusOK}, Tags: []string{"things"}, Op: platform.Op(put)},
		{Method: http.MethodPost, Path: "/api/v1/raw/{name}", Summary: "raw body in and out", ContentType: "text/markdown; charset=utf-8",
			RequestType: "text/plain", Op: platform.Op(func(_ context.Context, in rawIn) (rawOut, error) {
				return rawOut{Disposition: `attachment; filename="` + in.Name + `.md"`, Body: append([]byte("# "), in.Body...)}, nil
			})},
		{Method: http.MethodDelete, Path: "/api/v1/shelves/{shelf}/things/{id}", Summary: "delete", Status: http.StatusNoContent,
			Op: platform.CommandOp(func(_ context.Context, in thingRef) error {
				if in.ID == 404 {
					return fault.NotFound("thing", fmt.Sprint(in.ID))
				}
				return nil
			})},
		{Method: http.MethodGet, Path: "/api/v1/peer", Summary: "the peer",
			Op: platform.Op(func(_ context.Context, in peerIn) (Thing, error) {
				return Thing{Peer: in.Peer.RemoteIP.String() + " " + in.Peer.LocalIP.String()}, nil
			})},
		{Method: http.MethodPost, Path: "/api/v1/transfer", Summary: "transfer", Message: "Transfer completed",
			Op: platform.Op(func(_ context.Context, in transfer) (*transfer, error) { return &in, nil })},
		{Method: http.MethodGet, Path: "/api/v1/stream/{shelf}/{id}", Summary: "stream", ContentType: "text/event-stream",
			Op: platform.StreamOp(func(w http.ResponseWriter, r *http.Request, in thingRef) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s %d\n\n", in.Shelf, in.ID)
			})},
		{Method: http.MethodGet, Path: "/api/v1/mood", Summary: "a type named like a platform one",
			Op: platform.ReadOp(func(context.Context) (Health, error) { return Health{Mood: "fine"}, nil })},
		{Method: platform.MethodAny, Path: "/dav/{path...}", OperationID: "dav", Summary: "any method",
			Op: platform.Op(func(_ context.Context, in struct {
				Path string `path:"path"`
			}) (Thing, error) {
				return Thing{Shelf: in.Path}, nil
			})},
	}
}

func TestBinderBindsAndChecks(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "bind"}}, bindRoutes())
	base := serve(t, h)
	good := `{"title":"box","items":[{"name":"ab","color":"red","size":3}],"score":0.5}`
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		has                      []string // in the answer
	}{
		{"bound", "PUT", "/api/v1/shelves/top/things/7?limit=20", good, map[string]string{"If-Match": `"1"`}, 201,
			[]string{`"shelf":"top"`, `"id":7`, `"limit":20`, `"if_match":"\"1\""`, `"dry_run":false`, `"name":"ab"`}},
		{"status from the answer", "PUT", "/api/v1/shelves/top/things/7?dry_run=1", good, nil, 200, []string{`"dry_run":true`, `"limit":null`}},
		{"path enum", "PUT", "/api/v1/shelves/middle/things/7", good, nil, 400,
			[]string{`"code":"INVALID"`, `"details":"shelf"`, "path parameter shelf: must be one of top, bottom"}},
		{"path integer", "PUT", "/api/v1/shelves/top/things/x", good, nil, 400, []string{"path parameter id: must be an integer at least 1"}},
		{"path minimum", "PUT", "/api/v1/shelves/top/things/0", good, nil, 400, []string{"path parameter id: must be an integer at least 1"}},
		{"query maximum", "PUT", "/api/v1/shelves/top/things/7?limit=501", good, nil, 400, []string{"query parameter limit: must be an integer at least 0 and at most 500"}},
		{"query negative uint", "PUT", "/api/v1/shelves/top/things/7?limit=-1", good, nil, 400, []string{"query parameter limit: must be an integer at least 0"}},
		{"query twice", "PUT", "/api/v1/shelves/top/things/7?dry_run=1&dry_run=0", good, nil, 400, []string{"query parameter dry_run: must be given at most once"}},
		{"query boolean", "PUT", "/api/v1/shelves/top/things/7?dry_run=yes", good, nil, 400, []string{"query parameter dry_run: must be true, false, 1 or 0"}},
		{"required body field", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box"}`, nil, 400, []string{`"details":"items"`, "items: is required"}},
		{"required and null", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":null}`, nil, 400, []string{"items: is required"}},
		{"pattern", "PUT", "/api/v1/shelves/top/things/7", `{"title":"Box","items":[]}`, nil, 400, []string{"title: must match ^[a-z]+$"}},
		{"nested minLength", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":[{"name":"ab"},{"name":"a"}]}`, nil, 400,
			[]string{`"details":"items[1].name"`, "items[1].name: must be 2 to 8 characters, got 1"}},
		{"nested enum", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":[{"name":"ab","color":"green"}]}`, nil, 400,
			[]string{`items[0].color: must be one of red, blue, got \"green\"`}},
		{"nested pointer bound", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":[{"name":"ab","size":0}]}`, nil, 400,
			[]string{"items[0].size: must be at least 1 and at most 9, got 0"}},
		{"nested minLength of an absent string", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":[{"color":"red"}]}`, nil, 201,
			[]string{`"color":"red"`}},
		{"maxItems", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":[{"name":"ab"},{"name":"ab"},{"name":"ab"},{"name":"ab"}]}`, nil, 400,
			[]string{"items: must have at most 3 items, got 4"}},
		{"exclusive minimum", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":[],"score":-1}`, nil, 400,
			[]string{"score: must be above 0 and at most 1, got -1"}},
		{"zero counts as not given", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":[],"score":0}`, nil, 201, []string{`"score":0`}},
		{"unknown field", "PUT", "/api/v1/shelves/top/things/7", `{"title":"box","items":[],"nope":1}`, nil, 400, []string{"nope: unknown field"}},
		{"wrong type", "PUT", "/api/v1/shelves/top/things/7", `{"title":7}`, nil, 400, []string{"title: must be a string, got number"}},
		{"body Validate", "PUT", "/api/v1/shelves/top/things/7", `{"title":"forbidden","items":[]}`, nil, 400, []string{"title: is forbidden"}},
		{"input Validate", "PUT", "/api/v1/shelves/top/things/7", good, map[string]string{"If-Match": "stale"}, 412, []string{"PRECONDITION_FAILED"}},
		{"parameters checked before the body", "PUT", "/api/v1/shelves/top/things/13", `{"x`, nil, 400, []string{"id: is unlucky"}},
		{"raw in and out", "POST", "/api/v1/raw/notes", "hello", nil, 200, []string{"# hello"}},
		{"command", "DELETE", "/api/v1/shelves/top/things/7", "", nil, 204, nil},
		{"command error", "DELETE", "/api/v1/shelves/top/things/404", "", nil, 404, []string{`"code":"NOT_FOUND"`}},
		{"peer", "GET", "/api/v1/peer", "", nil, 200, []string{`"peer":"127.0.0.1 127.0.0.1"`}},
		{"plain answer on a container host", "POST", "/api/v1/transfer", `{"amount":"1.00"}`, nil, 200, []string{`{"amount":"1.00"}`}},
		{"stream binds first", "GET", "/api/v1/stream/top/3", "", nil, 200, []string{"data: top 3"}},
		{"stream refuses before it runs", "GET", "/api/v1/stream/top/zero", "", nil, 400, []string{"path parameter id: must be an integer"}},
		{"rest of the path", "PROPFIND", "/dav/a/b.txt", "", nil, 200, []string{`"shelf":"a/b.txt"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw)
			}
			for _, want := range tc.has {
				if !strings.Contains(string(raw), want) {
					t.Errorf("answer %s lacks %s", raw, want)
				}
			}
			switch tc.name {
			case "bound":
				if resp.Header.Get("ETag") != `"2"` {
					t.Errorf("ETag %q", resp.Header.Get("ETag"))
				}
			case "raw in and out":
				if resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" || resp.Header.Get("Content-Disposition") != `attachment; filename="notes.md"` {
					t.Errorf("headers %v", resp.Header)
				}
			case "command":
				if len(raw) != 0 {
					t.Errorf("204 with a body %q", raw)
				}
			}
		})
	}
}

// On the control plane an answer travels in the envelope with the
// route's message, and a command answers the envelope without data.
func TestBinderEnvelope(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "control"}, Style: platform.EnvelopeErrors}, bindRoutes())
	status, m, raw := do(t, h, "POST", "/api/v1/transfer", `{"amount":"2.50"}`)
	if status != 200 || m["statusCode"] != float64(200) || m["message"] != "Transfer completed" ||
		m["data"].(map[string]any)["amount"] != "2.50" {
		t.Fatalf("%d %s", status, raw)
	}
	status, m, raw = do(t, h, "POST", "/api/v1/transfer", `{"amount":5}`)
	if status != 400 || m["statusCode"] != float64(400) || m["message"] != "amount: must be a string, got number" {
		t.Fatalf("%d %s", status, raw)
	}
}

// The document is derived from the same types: named components,
// parameters with their rules, response headers, both success statuses,
// the envelope on the control plane, unique operation ids.
func TestBinderDocument(t *testing.T) {
	t.Parallel()
	for _, style := range []platform.ErrorStyle{platform.ContainerErrors, platform.EnvelopeErrors} {
		h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "bind"}, Style: style}, bindRoutes())
		raw, err := h.OpenAPIJSON()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Servers    []map[string]any                     `json:"servers"`
			Tags       []map[string]any                     `json:"tags"`
			Paths      map[string]map[string]map[string]any `json:"paths"`
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Servers) == 0 || len(doc.Tags) == 0 {
			t.Errorf("servers %v tags %v", doc.Servers, doc.Tags)
		}
		put := doc.Paths["/api/v1/shelves/{shelf}/things/{id}"]["put"]
		js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
		for _, want := range []string{
			`{"description":"the shelf","in":"path","name":"shelf","required":true,"schema":{"enum":["top","bottom"],"type":"string"}}`,
			`{"in":"path","name":"id","required":true,"schema":{"minimum":1,"type":"integer"}}`,
			`{"description":"the version","in":"header","name":"If-Match","required":false,"schema":{"type":"string"}}`,
			`"name":"dry_run","required":false,"schema":{"default":false,"type":"boolean"}}`,
			`{"in":"query","name":"limit","required":false,"schema":{"maximum":500,"minimum":0,"type":"integer"}}`,
		} {
			if !strings.Contains(js(put["parameters"]), want) {
				t.Errorf("parameters %s lack %s", js(put["parameters"]), want)
			}
		}
		if put["operationId"] != "putThing" {
			t.Errorf("operationId %v", put["operationId"])
		}
		resp := js(put["responses"])
		for _, want := range []string{`"201":{`, `"200":{`, `"ETag":{"description":"the new version"`} {
			if !strings.Contains(resp, want) {
				t.Errorf("responses %s lack %s", resp, want)
			}
		}
		if !strings.Contains(js(put["requestBody"]), `"$ref":"#/components/schemas/thingBody"`) {
			t.Errorf("requestBody %s", js(put["requestBody"]))
		}
		body := js(doc.Components.Schemas["thingBody"])
		for _, want := range []string{`"pattern":"^[a-z]+$"`, `"maxItems":3`, `"items":{"$ref":"#/components/schemas/item"}`,
			`"exclusiveMinimum":true,"maximum":1,"minimum":0`, `"required":["items"]`} {
			if !strings.Contains(body, want) {
				t.Errorf("thingBody %s lacks %s", body, want)
			}
		}
		if it := js(doc.Components.Schemas["item"]); !strings.Contains(it, `"size":{"maximum":9,"minimum":1,"nullable":true,"type":"integer"}`) {
			t.Errorf("item %s", it)
		}
		transfer := js(doc.Paths["/api/v1/transfer"]["post"]["responses"])
		wantEnvelope := style == platform.EnvelopeErrors
		if got := strings.Contains(transfer, `"required":["data","message","statusCode"]`); got != wantEnvelope {
			t.Errorf("style %d: transfer answer %s", style, transfer)
		}
		raws := js(doc.Paths["/api/v1/raw/{name}"]["post"])
		if !strings.Contains(raws, `"text/markdown":{"schema":{"format":"binary","type":"string"}}`) ||
			!strings.Contains(raws, `"text/plain":{"schema":{"format":"binary","type":"string"}}`) {
			t.Errorf("raw route %s", raws)
		}
		ids := map[any]bool{}
		for _, item := range doc.Paths {
			for _, op := range item {
				if ids[op["operationId"]] {
					t.Errorf("operationId %v twice", op["operationId"])
				}
				ids[op["operationId"]] = true
			}
		}
		for _, want := range []string{"davGet", "davPut", "davPost", "davDelete"} {
			if !ids[want] {
				t.Errorf("no operation %s in %v", want, ids)
			}
		}
		if _, ok := doc.Components.Schemas["Thing"]; !ok {
			t.Errorf("no Thing component: %v", doc.Components.Schemas)
		}
		// Two types named Health: the second is qualified with its package.
		mood := js(doc.Paths["/api/v1/mood"]["get"]["responses"])
		if !strings.Contains(js(doc.Components.Schemas["Health"]), `"service"`) ||
			!strings.Contains(mood, `"$ref":"#/components/schemas/Platform_testHealth"`) ||
			!strings.Contains(js(doc.Components.Schemas["Platform_testHealth"]), `"mood"`) {
			t.Errorf("Health components: %v; mood answers %s", doc.Components.Schemas, mood)
		}
	}
}

// A route table whose Op and entry disagree fails when the host is built.
func TestBinderRefusesInconsistentTables(t *testing.T) {
	t.Parallel()
	type mixed struct {
		ID   string `path:"id"`
		Name string `json:"name"`
	}
	op := func(_ context.Context, in thingRef) (Thing, error) { return Thing{}, nil }
	cases := map[string]platform.Route{
		"query beside an Op": {Method: "GET", Path: "/a/{shelf}/{id}", Op: platform.Op(op), Query: []platform.Param{{Name: "x"}}},
		"unbound path param": {Method: "GET", Path: "/a/{shelf}/{id}/{other}", Op: platform.Op(op)},
		"param not in path":  {Method: "GET", Path: "/a/{shelf}", Op: platform.Op(op)},
		"Op and Handler": {Method: "GET", Path: "/a/{shelf}/{id}", Op: platform.Op(op),
			Handler: func(fiber.Ctx) error { return nil }},
	}
	for name, r := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: the host was built", name)
				}
			}()
			platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "x"}}, []platform.Route{r})
		}()
	}
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "mixes parameters with body fields (Name)") {
				t.Errorf("mixed input: %v", p)
			}
		}()
		platform.Op(func(context.Context, mixed) (Thing, error) { return Thing{}, nil })
	}()
}

type sessionIn struct {
	Bind string `cookie:"bind" doc:"the browser binding"`
	Next string `query:"next"`
	INM  string `header:"If-None-Match"`
}

type sessionOut struct {
	Location  string   `header:"Location"`
	SetCookie []string `header:"Set-Cookie" doc:"one cookie a line"`
	ETag      string   `header:"ETag"`
	Status    int
	Body      *Thing
}

// signedThing's header signs the bytes the host wrote.
type signedThing struct{ Body Thing }

func (signedThing) BodyHeaders(body []byte) http.Header {
	return http.Header{"X-Body-Len": {fmt.Sprint(len(body))}, "X-Body-Head": {string(body[:12]), "second"}}
}

// originIn is checked against the request's own scheme and Host before
// its body is read.
type originIn struct {
	Origin string `header:"Origin"`
	Target platform.Target
	Body   transfer
}

func (o *originIn) ValidateParams() error {
	if o.Origin != o.Target.Scheme+"://"+o.Target.Host {
		e := fault.Errorf(fault.CodeForbidden, "another origin")
		e.SetCookies = []string{"a=; Path=/; Max-Age=0", "b=; Path=/; Max-Age=0"}
		return e
	}
	return nil
}

func sessionRoutes() []platform.Route {
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/origin", OperationID: "origin", Summary: "same origin only", Message: "Same origin",
			Op: platform.Op(func(_ context.Context, in originIn) (*transfer, error) { return &in.Body, nil })},
		{Method: http.MethodGet, Path: "/api/v1/session", OperationID: "session", Summary: "cookies, redirects and 304",
			Statuses: []int{http.StatusFound, http.StatusNotModified}, Message: "Session",
			Op: platform.Op(func(_ context.Context, in sessionIn) (sessionOut, error) {
				switch {
				case in.Next != "":
					return sessionOut{Location: in.Next, Status: http.StatusFound,
						SetCookie: []string{"a=1; Path=/; HttpOnly", "b=2; Path=/"}}, nil
				case in.INM == `"v1"`:
					return sessionOut{ETag: `"v1"`, Status: http.StatusNotModified, Body: &Thing{Shelf: "unsent"}}, nil
				}
				return sessionOut{ETag: `"v1"`, Body: &Thing{Shelf: in.Bind}}, nil
			})},
		{Method: http.MethodGet, Path: "/api/v1/gone", OperationID: "gone", Summary: "route headers on errors too", Message: "Gone",
			Headers: map[string]string{"Referrer-Policy": "no-referrer"},
			Op:      platform.ReadOp(func(context.Context) (*Thing, error) { return nil, fault.Errorf(fault.CodeGone, "used") })},
		{Method: http.MethodGet, Path: "/api/v1/signed", OperationID: "signed", Summary: "headers over the body", Message: "Signed",
			Op: platform.ReadOp(func(context.Context) (signedThing, error) { return signedThing{Body: Thing{Shelf: "s"}}, nil })},
	}
}

// Output header lists, redirects without a body, 304 without a body,
// cookie parameters, headers computed from the written body, and a
// route's own headers on its errors.
func TestBinderHeadersRedirectsAndBodyHeaders(t *testing.T) {
	t.Parallel()
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "control"}, Style: platform.EnvelopeErrors}, sessionRoutes())
	base := serve(t, h)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("/api/v1/session?next=/after")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/after" || body != "" {
		t.Fatalf("redirect: %d %q %q", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if c := resp.Header.Values("Set-Cookie"); len(c) != 2 || !strings.HasPrefix(c[0], "a=1") || !strings.HasPrefix(c[1], "b=2") {
		t.Fatalf("cookies: %q", c)
	}
	resp, body = get("/api/v1/session", "If-None-Match", `"v1"`)
	if resp.StatusCode != http.StatusNotModified || resp.Header.Get("ETag") != `"v1"` || body != "" {
		t.Fatalf("304: %d %q %q", resp.StatusCode, resp.Header.Get("ETag"), body)
	}
	resp, body = get("/api/v1/session", "Cookie", "bind=xyz")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"shelf":"xyz"`) {
		t.Fatalf("cookie parameter: %d %s", resp.StatusCode, body)
	}
	resp, body = get("/api/v1/signed")
	if resp.StatusCode != 200 || resp.Header.Get("X-Body-Len") != fmt.Sprint(len(body)) ||
		fmt.Sprint(resp.Header.Values("X-Body-Head")) != fmt.Sprint([]string{body[:12], "second"}) {
		t.Fatalf("body headers: %v %s", resp.Header, body)
	}
	if resp, body = get("/api/v1/gone"); resp.StatusCode != http.StatusGone || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("route headers on an error: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	// Target (scheme and Host) is bound before ValidateParams, which runs
	// before the body is read; an error's Set-Cookie lines go out.
	post := func(origin, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/origin", strings.NewReader(body))
		req.Header.Set("Origin", origin)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body = post(base, `{"amount":"1"}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"amount":"1"`) {
		t.Fatalf("same origin: %d %s", resp.StatusCode, body)
	}
	if resp, body = post(base, `{"nope":1}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("same origin, bad body: %d %s", resp.StatusCode, body)
	}
	resp, body = post("http://evil.example", `{"nope":1}`)
	if c := resp.Header.Values("Set-Cookie"); resp.StatusCode != http.StatusForbidden || len(c) != 2 || !strings.HasPrefix(c[1], "b=;") {
		t.Fatalf("another origin: %d %q %s", resp.StatusCode, c, body)
	}
	doc, err := platform.OpenAPI(platform.Info{Name: "control"}, sessionRoutes())
	if err != nil {
		t.Fatal(err)
	}
	op := doc["paths"].(map[string]any)["/api/v1/session"].(map[string]any)["get"].(map[string]any)
	params, _ := json.Marshal(op["parameters"])
	if !strings.Contains(string(params), `"in":"cookie","name":"bind"`) && !strings.Contains(string(params), `"in":"cookie"`) {
		t.Fatalf("cookie parameter not documented: %s", params)
	}
	responses := op["responses"].(map[string]any)
	for _, st := range []string{"302", "304"} {
		if _, has := responses[st].(map[string]any)["content"]; has {
			t.Fatalf("%s documents a body", st)
		}
	}
	if _, ok := responses["200"].(map[string]any)["headers"].(map[string]any)["Set-Cookie"]; !ok {
		t.Fatalf("Set-Cookie not documented: %v", responses["200"])
	}
}
