package platformtest

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"deckhand/platform"
)

// ServiceDeps is what the agent hands a service's New, for a test: the
// service's name, a fresh temporary DataDir, the system clock and a logger
// that discards.
func ServiceDeps(t testing.TB, name string) platform.ServiceDeps {
	return platform.ServiceDeps{Name: name, DataDir: t.TempDir(), Clock: platform.SystemClock{}, Logger: quiet()}
}

// ServiceHost is the host a service's tests drive: info titles its OpenAPI
// document, routes is its route table, and its logs are discarded.
func ServiceHost(info platform.Info, routes []platform.Route) *platform.Host {
	return platform.NewHost(platform.HostConfig{Info: info, Logger: quiet()}, routes)
}

// GetJSON sends GET path to h in-process and decodes the JSON answer into
// v; it returns the status and the raw body (for failure messages).
func GetJSON(t testing.TB, h *platform.Host, path string, v any) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1" // the request policy serves loopback names, not httptest's example.com
	resp, err := h.App().Test(req)
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

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Do sends req over the network with the default client and returns the
// status, the body decoded as a JSON object (nil when it is not one) and the
// raw body for failure messages.
func Do(t testing.TB, req *http.Request) (int, map[string]any, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, string(raw)
}
