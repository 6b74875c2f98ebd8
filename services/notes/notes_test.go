package notes_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/platformtest"
	"deckhand/services/notes"
)

type fixture struct {
	t     *testing.T
	h     *platform.Host
	clock *clockpkg.FakeClock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "notes")
	clock := clockpkg.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	deps.Clock = clock
	svc, err := notes.New(deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, h: platformtest.ServiceHost(t, svc), clock: clock}
}

func (f *fixture) do(method, path, body string, hdr ...string) (int, map[string]any, string, map[string]string) {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := platformtest.NewRequest(method, path, r)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := f.h.App().Test(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	h := map[string]string{}
	for k := range resp.Header {
		h[k] = resp.Header.Get(k)
	}
	return resp.StatusCode, m, string(raw), h
}

func (f *fixture) want(status int, field, method, path, body string, hdr ...string) map[string]any {
	f.t.Helper()
	got, m, raw, _ := f.do(method, path, body, hdr...)
	if got != status {
		f.t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, got, raw, status)
	}
	if field != "" && (m["details"] != field || !strings.Contains(m["message"].(string), field)) {
		f.t.Fatalf("%s %s %s: %s, want an error naming %q", method, path, body, raw, field)
	}
	return m
}

// race sends the same request n times at once and counts the statuses.
func (f *fixture) race(n int, method, path, body string, hdr ...string) map[int]int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, _, _, _ := f.do(method, path, body, hdr...)
			mu.Lock()
			codes[st]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

const doc = "/api/v1/notes/notebooks/nb1/nodes/n1/document"

const sample = `{"title":"Plan","blocks":[
 {"id":"h","type":"heading","level":2,"text":"Release <plan> & notes"},
 {"id":"p","type":"text","text":"We ship the new gateway on Friday after the migration has run on staging and the dashboards look quiet."},
 {"id":"l","type":"list","ordered":true,"items":["migrate","ship"]},
 {"id":"q","type":"quote","text":"Measure twice"},
 {"id":"c","type":"code","language":"go","text":"func main() {\n\tprintln(\"hi\")\n}"},
 {"id":"m","type":"math","text":"E = mc^2 + \\alpha_{i} \\cdot \\frac{a+b}{2} \\leq \\sqrt{x}"},
 {"id":"d","type":"diagram","text":"direction TD\nclient [Browser] -> gw [Gateway]: https\ngw -> svc [Service]\nsvc -> db [Store]\ngw -> db\nsvc -> svc: retry"},
 {"id":"x","type":"divider"}]}`

func TestVersionsGuardEveryWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.want(404, "", "GET", doc, "")
	f.want(404, "", "PATCH", doc, `{"title":"x"}`)
	m := f.want(201, "", "PUT", doc, sample)
	if m["version"] != 1.0 || len(m["blocks"].([]any)) != 8 {
		t.Fatalf("created %v", m)
	}
	_, _, _, h := f.do("GET", doc, "")
	if h["Etag"] != `"1"` {
		t.Fatalf("etag %q", h["Etag"])
	}
	f.want(428, "version", "PUT", doc, `{"blocks":[]}`)
	f.want(409, "version", "PUT", doc, `{"blocks":[],"version":0}`)
	f.want(200, "", "PUT", doc, sample, "If-Match", `"1"`)
	f.want(409, "version", "PUT", doc, sample, "If-Match", `"1"`)
	f.want(400, "version", "PUT", doc, `{"blocks":[],"version":3}`, "If-Match", `"2"`)
	f.want(400, "If-Match", "PUT", doc, `{"blocks":[]}`, "If-Match", `"abc"`)
	f.want(409, "version", "PATCH", doc, `{"title":"x","version":1}`)
	m = f.want(200, "", "PATCH", doc, `{"title":"Plan B","version":2,"ops":[
		{"op":"insert","index":0,"block":{"id":"intro","type":"text","text":"Hello"}},
		{"op":"update","id":"p","block":{"type":"text","text":"Changed"}},
		{"op":"delete","id":"x"},
		{"op":"move","id":"h","index":0}]}`)
	var order []string
	for _, b := range m["blocks"].([]any) {
		order = append(order, b.(map[string]any)["id"].(string))
	}
	if m["version"] != 3.0 || m["title"] != "Plan B" || strings.Join(order, ",") != "h,intro,p,l,q,c,m,d" {
		t.Fatalf("patched %v %v", m["version"], order)
	}
	// all or none: the second op fails, the first is not applied
	f.want(400, "ops[1].id", "PATCH", doc, `{"ops":[{"op":"delete","id":"intro"},{"op":"delete","id":"gone"}]}`)
	if m := f.want(200, "", "GET", doc, ""); m["version"] != 3.0 || len(m["blocks"].([]any)) != 8 {
		t.Fatalf("a refused patch changed the document: %v", m)
	}
	// of racing writers naming the same version, exactly one wins
	codes := f.race(8, "PATCH", doc, `{"title":"racer"}`, "If-Match", `"3"`)
	if codes[200] != 1 || codes[409] != 7 {
		t.Fatalf("racing writers: %v, want one 200 and seven 409", codes)
	}
}

func TestBadDocumentsNameTheField(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct{ body, field string }{
		{`{}`, "blocks"},
		{`{"blocks":[{"id":"a","type":"heading","text":"x"}]}`, "blocks[0].level"},
		{`{"blocks":[{"id":"a","type":"text"},{"id":"a","type":"text"}]}`, "blocks[1].id"},
		{`{"blocks":[{"id":"a b","type":"text"}]}`, "blocks[0].id"},
		{`{"blocks":[{"id":"a","type":"video"}]}`, "blocks[0].type"},
		{`{"blocks":[{"id":"a","type":"diagram","text":"a -> b\nc [oops"}]}`, "blocks[0].text"},
		{`{"blocks":[{"id":"a","type":"text","items":["x"]}]}`, "blocks[0].items"},
		{`{"blocks":[{"id":"a","type":"code","language":"go lang"}]}`, "blocks[0].language"},
		{`{"blocks":[],"title":"` + strings.Repeat("t", 300) + `"}`, "title"},
		{`{"blocks":[],"extra":1}`, "extra"},
		{`{"blocks":"no"}`, "blocks"},
	}
	for _, c := range cases {
		f.want(400, c.field, "PUT", doc, c.body)
	}
	f.want(404, "", "GET", doc, "") // nothing was written
	f.want(201, "", "PUT", doc, `{"blocks":[{"id":"a","type":"text","text":"x"}]}`)
	for _, c := range []struct{ body, field string }{
		{`{}`, "ops"},
		{`{"ops":[{"op":"explode"}]}`, "ops[0].op"},
		{`{"ops":[{"op":"insert"}]}`, "ops[0].block"},
		{`{"ops":[{"op":"insert","block":{"id":"a","type":"text"}}]}`, "ops[0].block.id"},
		{`{"ops":[{"op":"insert","index":5,"block":{"id":"b","type":"text"}}]}`, "ops[0].index"},
		{`{"ops":[{"op":"update","id":"a","block":{"id":"z","type":"text"}}]}`, "ops[0].block.id"},
		{`{"ops":[{"op":"move","id":"a","index":-1}]}`, "ops[0].index"},
	} {
		f.want(400, c.field, "PATCH", doc, c.body)
	}
	f.want(400, "notebookId", "GET", "/api/v1/notes/notebooks/-x/nodes/n1/document", "")
	f.want(404, "", "GET", "/api/v1/notes/notebooks/nb1/nodes/n1/blocks/zz/svg", "")
	f.want(404, "", "GET", "/api/v1/notes/notebooks/nb1/nodes/other/blocks/a/svg", "")
	f.want(404, "", "POST", "/api/v1/notes/notebooks/nb1/nodes/other/export-ticket", "")
	f.want(400, "ttl_seconds", "POST", "/api/v1/notes/notebooks/nb1/nodes/n1/export-ticket", `{"ttl_seconds":99999}`)
}

// parseSVG checks raw is well-formed XML with an <svg> root and counts
// its elements by name.
func parseSVG(t *testing.T, raw string) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(raw))
	counts := map[string]int{}
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, raw)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
				if se.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root namespace %q", se.Name.Space)
				}
			}
			counts[se.Name.Local]++
		}
	}
	if root != "svg" {
		t.Fatalf("root %q", root)
	}
	return counts
}

func TestEveryBlockRendersAsWellFormedSVG(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.want(201, "", "PUT", doc, sample)
	svg := "/api/v1/notes/notebooks/nb1/nodes/n1/blocks/"
	for _, id := range []string{"h", "p", "l", "q", "c", "m", "d", "x"} {
		st, _, raw, h := f.do("GET", svg+id+"/svg?width=300", "")
		if st != 200 || !strings.HasPrefix(h["Content-Type"], "image/svg+xml") {
			t.Fatalf("%s: %d %s %s", id, st, h["Content-Type"], raw)
		}
		// An SVG opened as a page runs its scripts on the agent's origin
		// unless the answer sandboxes it.
		if h["Content-Security-Policy"] != platform.SandboxCSP || h["X-Content-Type-Options"] != "nosniff" {
			t.Fatalf("%s: CSP %q, X-Content-Type-Options %q", id, h["Content-Security-Policy"], h["X-Content-Type-Options"])
		}
		counts := parseSVG(t, raw)
		switch id {
		case "p": // wrapped to the width: several lines
			if counts["tspan"] < 3 {
				t.Fatalf("text not wrapped at 300px: %s", raw)
			}
		case "h":
			if !strings.Contains(raw, ">Release &lt;plan&gt;<") || !strings.Contains(raw, ">&amp; notes<") {
				t.Fatalf("heading text: %s", raw)
			}
		case "c":
			if !strings.Contains(raw, `    println(&quot;hi&quot;)`) {
				t.Fatalf("code indentation lost: %s", raw)
			}
		case "m":
			for _, s := range []string{"α", "·", "(a+b)/2", "≤", "√x"} {
				if !strings.Contains(raw, s) {
					t.Fatalf("math: no %q in %s", s, raw)
				}
			}
			if !strings.Contains(raw, `font-size="14">2</tspan>`) {
				t.Fatalf("math: the exponent is not raised and smaller: %s", raw)
			}
		case "d": // four boxes, five edges: three straight, one a loop, one bowing around the box it skips
			if counts["rect"] != 1+4 || counts["line"] != 3 || counts["path"] != 1+2 {
				t.Fatalf("diagram elements %v: %s", counts, raw)
			}
			for _, s := range []string{"Browser", "Gateway", "Service", "Store", "https", "retry"} {
				if !strings.Contains(raw, ">"+s+"<") {
					t.Fatalf("diagram: no %q", s)
				}
			}
		}
	}
	f.want(400, "width", "GET", svg+"p/svg?width=10", "")
}

func TestExportTicketsAreSingleUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.want(201, "", "PUT", doc, sample)
	tk := "/api/v1/notes/notebooks/nb1/nodes/n1/export-ticket"
	m := f.want(201, "", "POST", tk, "")
	path := m["path"].(string)
	if m["url"] != path || m["format"] != "markdown" {
		t.Fatalf("ticket %v", m)
	}
	st, _, md, h := f.do("GET", path, "")
	if st != 200 || !strings.HasPrefix(h["Content-Type"], "text/markdown") || !strings.Contains(h["Content-Disposition"], `filename="n1.md"`) {
		t.Fatalf("download %d %v %s", st, h, md)
	}
	for _, s := range []string{"# Plan\n", "## Release <plan> & notes\n", "1. migrate\n2. ship\n", "> Measure twice\n",
		"```go\nfunc main() {", "$$\nE = mc^2", "```diagram\ndirection TD", "---\n"} {
		if !strings.Contains(md, s) {
			t.Fatalf("markdown has no %q:\n%s", s, md)
		}
	}
	f.want(410, "ticket", "GET", path, "")
	f.want(404, "", "GET", "/api/v1/notes/export?ticket=not-a-ticket", "")
	// expiry
	m = f.want(201, "", "POST", tk, `{"ttl_seconds":60}`)
	f.clock.Advance(61 * time.Second)
	f.want(410, "ticket", "GET", m["path"].(string), "")
	// racing downloads: exactly one gets the document
	m = f.want(201, "", "POST", tk, "", "X-Forwarded-Prefix", "/_/notes")
	if !strings.HasPrefix(m["url"].(string), "/_/notes/api/v1/notes/export?ticket=") {
		t.Fatalf("url behind the gateway %v", m["url"])
	}
	codes := f.race(8, "GET", m["path"].(string), "")
	if codes[200] != 1 || codes[410] != 7 {
		t.Fatalf("racing downloads %v", codes)
	}
}

func TestRoutesAreDocumented(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	platformtest.CheckRoutesDocumented(t, f.h)
	if platformtest.CheckQueryValidation(t, f.h) == 0 {
		t.Fatal("no query parameter checked")
	}
}

// TestEveryBodyRefusesBadJSONNamingTheField: malformed JSON and unknown
// members are 400s naming body or the member, on every route with a body.
func TestEveryBodyRefusesBadJSONNamingTheField(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.want(201, "", "PUT", doc, sample)
	vals := strings.NewReplacer("{notebookId}", "nb1", "{nodeId}", "n1")
	svc, err := notes.New(platformtest.ServiceDeps(t, "notes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range svc.Routes() {
		if !r.JSONBody() {
			continue
		}
		path := vals.Replace(r.Path)
		f.want(400, "body", r.Method, path, `{"x`)
		f.want(400, "zz_unknown", r.Method, path, `{"zz_unknown":1}`)
		n++
	}
	if n != 3 {
		t.Fatalf("%d routes take a body, want 3", n)
	}
	f.want(400, "blocks.level", "PUT", doc, `{"blocks":[{"id":"a","type":"heading","level":"two"}]}`)
}

func TestListPagesNodesInOrderWithoutBlocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	doc := `{"title":"T","blocks":[{"id":"a","type":"text","text":"x"},{"id":"b","type":"divider"}],"version":0}`
	for _, ref := range []string{"nb2/z", "nb1/b", "nb1/a", "nb1/c"} {
		f.want(201, "", "PUT", "/api/v1/notes/notebooks/"+strings.Replace(ref, "/", "/nodes/", 1)+"/document", doc)
	}
	ids := func(m map[string]any) []string {
		var out []string
		for _, n := range m["nodes"].([]any) {
			n := n.(map[string]any)
			if _, has := n["blocks"].(float64); !has || n["title"] != "T" || n["version"] != 1.0 {
				t.Fatalf("node %v: want title, version and a block count", n)
			}
			out = append(out, n["notebook_id"].(string)+"/"+n["node_id"].(string))
		}
		return out
	}
	all := f.want(200, "", "GET", "/api/v1/notes", "")
	if got := strings.Join(ids(all), ","); got != "nb1/a,nb1/b,nb1/c,nb2/z" || all["next"] != nil {
		t.Fatalf("list: %s next %v", got, all["next"])
	}
	if n := all["nodes"].([]any)[0].(map[string]any)["blocks"]; n != 2.0 {
		t.Fatalf("blocks = %v, want the count 2", n)
	}
	p1 := f.want(200, "", "GET", "/api/v1/notes?notebook=nb1&limit=2", "")
	if got := strings.Join(ids(p1), ","); got != "nb1/a,nb1/b" || p1["next"] != "nb1/b" {
		t.Fatalf("page 1: %s next %v", got, p1["next"])
	}
	p2 := f.want(200, "", "GET", "/api/v1/notes?notebook=nb1&limit=2&after=nb1/b", "")
	if got := strings.Join(ids(p2), ","); got != "nb1/c" || p2["next"] != nil {
		t.Fatalf("page 2: %s next %v", got, p2["next"])
	}
	if m := f.want(200, "", "GET", "/api/v1/notes?notebook=none", ""); len(m["nodes"].([]any)) != 0 {
		t.Fatalf("unknown notebook: %v, want no nodes", m)
	}
	for _, tc := range []struct{ query, field string }{
		{"notebook=../x", "notebook"}, {"after=nb1", "after"}, {"after=nb1/b/c", "after"}, {"limit=0", "limit"}, {"limit=1001", "limit"},
	} {
		f.want(400, tc.field, "GET", "/api/v1/notes?"+tc.query, "")
	}
}
