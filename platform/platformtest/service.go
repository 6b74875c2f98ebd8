package platformtest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/store"
)

// ServiceDeps is what the agent hands a service's New, for a test: the
// service's name, a fresh temporary DataDir with the service's own store
// file in it (closed at cleanup), the system clock, a logger that discards
// and seams that go to it.
func ServiceDeps(t testing.TB, name string) contract.ServiceDeps {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	log := quiet()
	return contract.ServiceDeps{Name: name, DataDir: dir, Store: db, Clock: clock.SystemClock{}, Logger: log,
		Journal: contract.LogJournal{Logger: log}, Notifier: contract.LogNotifier{Logger: log}}
}

// ServiceHost is the host a service's tests drive, built the way every
// runner builds it (contract.NewServiceHost, so under the default request
// policy); its logs are discarded.
func ServiceHost(t testing.TB, svc contract.ContainerService) *platform.Host {
	t.Helper()
	h, err := contract.NewServiceHost(svc, contract.ServiceDeps{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// NewRequest is httptest.NewRequest as a local non-browser client sends it:
// Host 127.0.0.1, which the request policy serves (httptest's example.com
// gets 421). For driving a host in-process with App().Test.
func NewRequest(method, target string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	req.Host = "127.0.0.1"
	return req
}

// GetJSON sends GET path to h in-process and decodes the JSON answer into
// v; it returns the status and the raw body (for failure messages).
func GetJSON(t testing.TB, h *platform.Host, path string, v any) (int, []byte) {
	t.Helper()
	resp, err := h.App().Test(NewRequest("GET", path, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("GET %s: %d %s: %v", path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, raw
}

// Call sends a request to h in-process (no time limit) and returns the
// status, the body decoded as a JSON object (nil when it is not one) and
// the raw body. body is nil (none), a string or []byte (sent as written)
// or a value sent as JSON; a request with a body says Content-Type
// application/json unless hdr (name, value pairs) sets it.
func Call(t testing.TB, h *platform.Host, method, path string, body any, hdr ...string) (int, map[string]any, string) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		if b != "" {
			rd = strings.NewReader(b)
		}
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req := NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.App().Test(req, fiber.TestConfig{Timeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, string(raw)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Do sends req over the network with the default client and returns the
// status, the body decoded as a JSON object (nil when it is not one) and the
// raw body for failure messages.
func Do(t testing.TB, req *http.Request) (int, map[string]any, string) {
	t.Helper()
	resp, raw := DoResponse(t, req)
	var m map[string]any
	_ = json.Unmarshal([]byte(raw), &m)
	return resp.StatusCode, m, raw
}

// DoResponse sends req and returns the response (its headers) with the
// body read.
func DoResponse(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}
