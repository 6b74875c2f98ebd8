package platform_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform"
	"deckhand/platform/fault"
)

type sinkIn struct {
	Name string `query:"name" required:"true"`
	Body io.Reader
}

type sinkOut struct {
	Bytes  int64  `json:"bytes" required:"true"`
	SHA256 string `json:"sha256" required:"true"`
}

type fileOut struct {
	Status int
	Length int64  `header:"Content-Length"`
	Type   string `header:"Content-Type"`
	ETag   string `header:"ETag"`
	Body   io.Reader
}

type eventsOut struct {
	Cache string `header:"Cache-Control"`
	Body  platform.BodyWriter
}

func streamRoutes(dir string) []platform.Route {
	return []platform.Route{
		{Method: http.MethodPut, Path: "/sink", OperationID: "sink", Summary: "hash a streamed body", RequestType: "application/x-tar",
			Op: platform.Op(func(_ context.Context, in sinkIn) (sinkOut, error) {
				if in.Name == "refuse" {
					return sinkOut{}, fault.Invalid("name", "is refused before the body is read")
				}
				h := sha256.New()
				n, err := io.Copy(h, in.Body)
				if err != nil {
					return sinkOut{}, err
				}
				if in.Name == "judge" {
					return sinkOut{}, fault.Invalid("body", "is refused once read")
				}
				return sinkOut{Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
			})},
		{Method: http.MethodGet, Path: "/file", OperationID: "file", Summary: "a file, zero-copy", ContentType: "application/octet-stream",
			Statuses: []int{http.StatusNotModified},
			Op: platform.Op(func(_ context.Context, in struct {
				IfNoneMatch string `header:"If-None-Match"`
			}) (fileOut, error) {
				if in.IfNoneMatch == `"v1"` {
					return fileOut{Status: http.StatusNotModified, ETag: `"v1"`}, nil
				}
				f, err := os.Open(filepath.Join(dir, "data"))
				if err != nil {
					return fileOut{}, err
				}
				fi, _ := f.Stat()
				return fileOut{Length: fi.Size(), Type: "text/plain; charset=utf-8", ETag: `"v1"`, Body: f}, nil
			})},
		{Method: http.MethodGet, Path: "/events", OperationID: "events", Summary: "written as made", ContentType: "text/event-stream",
			Op: platform.ReadOp(func(context.Context) (eventsOut, error) {
				return eventsOut{Cache: "no-cache", Body: func(w platform.StreamWriter) {
					for i := range 3 {
						fmt.Fprintf(w, "data: %d\n\n", i)
						if w.Flush() != nil {
							return
						}
					}
				}}, nil
			})},
	}
}

// An io.Reader Body reaches the method unread (a body far larger than the
// host's buffer arrives whole), an io.Reader answer is streamed with its
// Content-Length and headers, a BodyWriter writes as it goes, and a method
// that fails without reading its body closes the connection after the
// answer (one that read it whole keeps it).
func TestBinderStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	content := strings.Repeat("deckhand ", 200000) // 1.8 MB
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "stream"}, BodyLimit: 64 << 10,
		StreamRequestBody: true}, streamRoutes(dir))
	base := serve(t, h)

	big := strings.Repeat("x", 8<<20) // past BodyLimit: only a stream takes it
	req, _ := http.NewRequest("PUT", base+"/sink?name=a", strings.NewReader(big))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got sinkOut
	_ = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	sum := sha256.Sum256([]byte(big))
	if resp.StatusCode != 200 || got.Bytes != int64(len(big)) || got.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("sink: %d %+v", resp.StatusCode, got)
	}

	req, _ = http.NewRequest("PUT", base+"/sink?name=refuse", strings.NewReader(big))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !resp.Close || !strings.Contains(string(raw), "is refused") {
		t.Fatalf("refused sink: %d close=%v %s", resp.StatusCode, resp.Close, raw)
	}

	// Refused once read whole: the connection stays.
	req, _ = http.NewRequest("PUT", base+"/sink?name=judge", strings.NewReader(big))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Close {
		t.Fatalf("judged sink: %d close=%v", resp.StatusCode, resp.Close)
	}

	resp, err = http.Get(base + "/file")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(raw) != content || resp.ContentLength != int64(len(content)) ||
		resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Header.Get("ETag") != `"v1"` {
		t.Fatalf("file: %d length %d %v", resp.StatusCode, resp.ContentLength, resp.Header)
	}
	req, _ = http.NewRequest("GET", base+"/file", nil)
	req.Header.Set("If-None-Match", `"v1"`)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 304 || len(raw) != 0 || resp.Header.Get("ETag") != `"v1"` {
		t.Fatalf("not modified: %d %q %v", resp.StatusCode, raw, resp.Header)
	}

	resp, err = http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(raw) != "data: 0\n\ndata: 1\n\ndata: 2\n\n" ||
		resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("events: %d %q %v", resp.StatusCode, raw, resp.Header)
	}
}

// The document shows streamed bodies as binary of their media type and a
// streamed answer's Content-Length as an integer header.
func TestBinderStreamDocument(t *testing.T) {
	t.Parallel()
	doc, err := platform.OpenAPI(platform.Info{Name: "stream", Title: "stream", Version: "1"}, streamRoutes(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(doc)
	var d struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Headers map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"headers"`
				Content map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	binary := func(s map[string]any) bool { return s["type"] == "string" && s["format"] == "binary" }
	if s := d.Paths["/sink"]["put"].RequestBody.Content["application/x-tar"].Schema; !binary(s) {
		t.Errorf("sink request body %v", s)
	}
	file := d.Paths["/file"]["get"].Responses
	if s := file["200"].Content["application/octet-stream"].Schema; !binary(s) {
		t.Errorf("file answer %v", file["200"])
	}
	if s := file["200"].Headers["Content-Length"].Schema; s["type"] != "integer" {
		t.Errorf("file Content-Length %v", file["200"].Headers)
	}
	if len(file["304"].Content) != 0 {
		t.Errorf("304 with content %v", file["304"].Content)
	}
	if s := d.Paths["/events"]["get"].Responses["200"].Content["text/event-stream"].Schema; !binary(s) {
		t.Errorf("events answer %v", d.Paths["/events"]["get"].Responses["200"])
	}
}

type davIn struct {
	Path   string `path:"path"`
	Target platform.Target
}

type davOut struct {
	Method string `json:"method"`
	Host   string `json:"host"`
	Path   string `json:"path"`
}

// A route of a WebDAV method gets the request's method and Host in a
// Target field and the rest of the path, empty for the prefix itself; the
// document lists it under x-additional-operations (OpenAPI 3.0 has no
// field for PROPFIND) with its own operationId.
func TestBinderWebDAVMethods(t *testing.T) {
	t.Parallel()
	fn := func(_ context.Context, in davIn) (davOut, error) {
		return davOut{Method: in.Target.Method, Host: in.Target.Host, Path: in.Path}, nil
	}
	routes := []platform.Route{
		{Method: "PROPFIND", Path: "/dav/{path...}", OperationID: "davPropfind", Summary: "properties", Op: platform.Op(fn)},
		{Method: "GET", Path: "/dav/{path...}", OperationID: "davGet", Summary: "get", Op: platform.Op(fn)},
	}
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "dav"}}, routes)
	base := serve(t, h)
	for _, tc := range []struct{ method, path, want string }{
		{"PROPFIND", "/dav/a%20b/c", `"method":"PROPFIND","host":"` + strings.TrimPrefix(base, "http://") + `","path":"a%20b/c"`},
		{"PROPFIND", "/dav/", `"path":""`},
		{"GET", "/dav/x", `"method":"GET"`},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s %s: %d %s, want %s", tc.method, tc.path, resp.StatusCode, raw, tc.want)
		}
	}
	doc, err := platform.OpenAPI(platform.Info{Name: "dav"}, routes)
	if err != nil {
		t.Fatal(err)
	}
	item := doc["paths"].(map[string]any)["/dav/{path}"].(map[string]any)
	extra, _ := item["x-additional-operations"].(map[string]any)
	pf, _ := extra["PROPFIND"].(map[string]any)
	if pf["operationId"] != "davPropfind" || item["propfind"] != nil || item["get"].(map[string]any)["operationId"] != "davGet" {
		t.Fatalf("path item %v", item)
	}
}
