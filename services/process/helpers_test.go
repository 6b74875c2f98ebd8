package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"

	"deckhand/platform/platformtest"
	"deckhand/services/process"
)

// env is a process service on a loopback port.
type env struct {
	svc   *process.Service
	url   string
	seams *platformtest.Seams
	data  string
}

// newBenchEnv is the Go SDK's handle of a service with default settings.
func newBenchEnv(b *testing.B) *deckhand.Container {
	deps := platformtest.ServiceDeps(b, "process")
	svc, err := process.New(deps, nil)
	if err != nil {
		b.Fatal(err)
	}
	url := platformtest.Serve(b, platformtest.ServiceHost(b, svc))
	b.Cleanup(func() { _ = svc.Close() })
	return sdkOf(b, url)
}

// sdkOf is the Go SDK's handle of the process service at url.
func sdkOf(tb testing.TB, url string) *deckhand.Container {
	c, err := deckhand.NewService("process", url, deckhand.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// sdkCall sends in to the service's path through the SDK and decodes the
// answer into the service's own model.
func sdkCall[T any](ctx context.Context, c *deckhand.Container, method, path string, in any) (T, error) {
	var out T
	err := c.Call(ctx, method, "process", path, nil, in, &out)
	return out, err
}

func newEnv(t *testing.T, tune ...func(*process.Settings)) *env {
	t.Helper()
	set := process.Defaults()
	for _, f := range tune {
		f(set)
	}
	deps := platformtest.ServiceDeps(t, "process")
	seams := &platformtest.Seams{}
	deps.Journal, deps.Notifier = seams, seams
	svc, err := process.New(deps, set)
	if err != nil {
		t.Fatal(err)
	}
	h := platformtest.ServiceHost(t, svc)
	url := platformtest.Serve(t, h)
	// Cleanups run last first: the service stops (ending its streams)
	// before the host.
	t.Cleanup(func() { _ = svc.Close() })
	return &env{svc: svc, url: url, seams: seams, data: deps.DataDir}
}

// call sends a JSON request and answers the status and body.
func (e *env) call(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// decode calls and decodes a wanted status's answer into v.
func (e *env) decode(t *testing.T, method, path string, body any, want int, v any) {
	t.Helper()
	status, raw := e.call(t, method, path, body)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, status, raw, want)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

func (e *env) run(t *testing.T, body any) process.RunResult {
	t.Helper()
	var r process.RunResult
	e.decode(t, "POST", "/api/v1/process/run", body, 200, &r)
	return r
}

func (e *env) start(t *testing.T, body any) process.Process {
	t.Helper()
	var p process.Process
	e.decode(t, "POST", "/api/v1/process", body, 201, &p)
	return p
}

func (e *env) get(t *testing.T, id string) process.Process {
	t.Helper()
	var p process.Process
	e.decode(t, "GET", "/api/v1/process/"+id, nil, 200, &p)
	return p
}

// waitFor polls until cond holds; the limit only guards against a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitEnded polls until the process's record is final and its output complete.
func (e *env) waitEnded(t *testing.T, id string) process.Process {
	t.Helper()
	var p process.Process
	waitFor(t, "process "+id+" to end", func() bool {
		p = e.get(t, id)
		return p.OutputComplete
	})
	return p
}

// output reads all of a process's output (until next_offset stops).
func (e *env) output(t *testing.T, id string) (stdout, stderr string) {
	t.Helper()
	var so, se strings.Builder
	since := int64(0)
	for {
		var page process.OutputPage
		e.decode(t, "GET", "/api/v1/process/"+id+"/output?since="+strconv.FormatInt(since, 10), nil, 200, &page)
		for _, c := range page.Chunks {
			w := &so
			if c.Stream == "stderr" {
				w = &se
			}
			w.WriteString(c.Data)
		}
		if page.NextOffset == since || page.Done {
			return so.String(), se.String()
		}
		since = page.NextOffset
	}
}

// gone reports whether pid no longer exists (or is a zombie someone else
// will reap: it runs nothing).
func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	return procState(pid) == "Z"
}

// procState is the state letter of /proc/PID/stat ("" when gone).
func procState(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// pids reads the whitespace-separated numbers in s.
func pids(t *testing.T, s string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Fields(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("not a pid: %q in %q", f, s)
		}
		out = append(out, n)
	}
	return out
}

// errorBody is the service's error answer.
type errorBody struct {
	Code    string `json:"code"`
	Details string `json:"details"`
	Message string `json:"message"`
}

// call sends body with a content type to url.
func call(t *testing.T, method, url, ctype string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
