package gateway_test

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkProxy: GET /api/v1/version of the real files service, direct and
// through the gateway, with parallel keep-alive clients.
//
//	go test -run '^$' -bench Proxy -cpu 2 ./agent/gateway/
func BenchmarkProxy(b *testing.B) {
	f := newFixture(b, "", "")
	direct := f.filesURL + "/api/v1/version"
	for _, tc := range []struct{ name, url string }{
		{"direct", direct},
		{"gateway", f.url + "/_/files/api/v1/version"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Get(tc.url)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}
