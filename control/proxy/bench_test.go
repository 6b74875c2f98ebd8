package proxy_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"deckhand/control/proxy"
)

// BenchmarkProxy sets the platform proxy beside the agent's own gateway in
// one run: the same small GET and the same 1 GiB download, straight to the
// gateway and through the proxy. p50-us and p99-us are per request.
//
//	go test -run '^$' -bench Proxy -benchtime 2000x ./control/proxy/   (small)
func BenchmarkProxy(b *testing.B) {
	gw := agent(b, "proj", "ctr1")
	cat := &catalog{byID: map[string]*proxy.Container{"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running", Addr: gw}}}
	px := serve(b, proxy.New(proxy.Config{Domain: "deckhand.test"}, cat))
	big := filepath.Join(b.TempDir(), "big")
	f, err := os.Create(big)
	if err != nil {
		b.Fatal(err)
	}
	const size = 1 << 30
	if err := f.Truncate(size); err != nil {
		b.Fatal(err)
	}
	f.Close()
	host := "proj-ctr1-files-1.local.deckhand.test"
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	// The client reads 256 KiB at a time (io.Discard's own ReadFrom
	// reads 8 KiB), as a download client does: its reads would otherwise
	// cost more than the proxy and hide its cost.
	buf := make([]byte, 256<<10)
	do := func(b *testing.B, addr, path string) int64 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Host = host
		resp, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.CopyBuffer(onlyWriter{io.Discard}, resp.Body, buf)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d", path, resp.StatusCode)
		}
		return n
	}
	for _, bc := range []struct{ name, path string }{
		{"small", "/api/v1/files/stat?path=/"},
		{"1GiB", "/api/v1/files/content?path=" + big},
	} {
		for _, to := range []struct{ name, addr string }{{"direct", gw}, {"proxy", px}} {
			b.Run(bc.name+"/"+to.name, func(b *testing.B) {
				if bc.name == "1GiB" {
					b.SetBytes(size)
				}
				lat := make([]time.Duration, 0, b.N)
				for i := 0; i < b.N; i++ {
					start := time.Now()
					do(b, to.addr, bc.path)
					lat = append(lat, time.Since(start))
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
			})
		}
	}
}

// onlyWriter hides its Writer's ReadFrom, so io.CopyBuffer uses the buffer.
type onlyWriter struct{ io.Writer }
