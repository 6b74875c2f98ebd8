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
// gateway and through the proxy, alternately. proxy/direct is the ratio of
// requests (or bytes) per second through the proxy to those straight;
// added-p99-us is what the proxy adds to the 99th percentile.
//
//	go test -run '^$' -bench Proxy/small -benchtime 3000x ./control/proxy/
//	go test -run '^$' -bench Proxy/1GiB -benchtime 4x ./control/proxy/
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
	for _, bc := range []struct {
		name, path string
		size       int64
	}{
		{"small", "/api/v1/files/stat?path=/", 0},
		{"1GiB", "/api/v1/files/content?path=" + big, size},
	} {
		// Each iteration sends the request straight and through the
		// proxy, one after the other, so both meet the same load.
		b.Run(bc.name, func(b *testing.B) {
			var lat [2][]time.Duration
			var total [2]time.Duration
			for i := 0; i < b.N; i++ {
				for k, addr := range []string{gw, px} {
					if i%2 == 1 {
						k, addr = 1-k, []string{gw, px}[1-k] // alternate which goes first
					}
					start := time.Now()
					do(b, addr, bc.path)
					d := time.Since(start)
					lat[k] = append(lat[k], d)
					total[k] += d
				}
			}
			for k := range lat {
				sort.Slice(lat[k], func(i, j int) bool { return lat[k][i] < lat[k][j] })
			}
			p := func(k int, q float64) time.Duration { return lat[k][int(float64(len(lat[k])-1)*q)] }
			b.ReportMetric(float64(total[0])/float64(total[1]), "proxy/direct")
			b.ReportMetric(float64(p(0, 0.5).Microseconds()), "direct-p50-us")
			b.ReportMetric(float64(p(1, 0.5).Microseconds()), "proxy-p50-us")
			b.ReportMetric(float64((p(1, 0.99) - p(0, 0.99)).Microseconds()), "added-p99-us")
			if bc.size > 0 {
				b.ReportMetric(float64(bc.size)*float64(b.N)/total[0].Seconds()/1e6, "direct-MB/s")
				b.ReportMetric(float64(bc.size)*float64(b.N)/total[1].Seconds()/1e6, "proxy-MB/s")
			}
		})
	}
}

// onlyWriter hides its Writer's ReadFrom, so io.CopyBuffer uses the buffer.
type onlyWriter struct{ io.Writer }
