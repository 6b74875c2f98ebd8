package files_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/files"
)

// serve runs the file service over root on a real loopback listener (the
// way the agent runs it) and returns its base URL.
func serve(t testing.TB, set files.Settings) (string, *files.Service) {
	t.Helper()
	return serveWith(t, platformtest.ServiceDeps(t, "files"), set)
}

// serveWith is serve over given deps (a restart reuses the store).
func serveWith(t testing.TB, deps contract.ServiceDeps, set files.Settings) (string, *files.Service) {
	t.Helper()
	if set.MaxUpload == "" {
		set.MaxUpload = "16G"
	}
	svc, err := files.New(deps, &set)
	if err != nil {
		t.Fatal(err)
	}
	h, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- platform.ServeUntil(ctx, h, ln, 2*time.Second) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = svc.Close()
	})
	return "http://" + ln.Addr().String(), svc
}

// call sends one request and returns status, headers and body.
func call(t testing.TB, method, url string, body io.Reader, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

func str(s string) io.Reader { return strings.NewReader(s) }
