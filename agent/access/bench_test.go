package access_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"deckhand/agent/access"
	"deckhand/agent/gateway"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// open admits everything: the bare gateway's cost without a document.
type open struct{}

func (open) Authorize(gateway.Request, gateway.Target) (gateway.Identity, *fault.Error) {
	return gateway.Identity{}, nil
}

type discard struct{}

func (discard) Record(contract.JournalEntry) {}

// doc50 is a document of 50 groups of every type whose rules all admit
// the request's program, the matching group last in name order: every
// other group is checked first (the worst case of the evaluator).
func doc50() string {
	var groups, perms []string
	for i := 0; i < 49; i++ {
		name := fmt.Sprintf("g%02d", i)
		var g string
		switch i % 5 {
		case 0:
			g = fmt.Sprintf(`{"type":"jwt","algorithm":"HS256","secret":"other-%d","sources":["header:Authorization"]}`, i)
		case 1:
			g = fmt.Sprintf(`{"type":"password","username":"u%d","password":"pw-%d"}`, i, i)
		case 2:
			g = fmt.Sprintf(`{"type":"ip","range":"10.%d.0.0/16"}`, i)
		case 3:
			g = fmt.Sprintf(`{"type":"token","header":"X-Key-%d","value":"v%d"}`, i, i)
		case 4:
			g = fmt.Sprintf(`{"type":"token","param":"k%d","value":"v%d"}`, i, i)
		}
		groups = append(groups, `"`+name+`":`+g)
		perms = append(perms, `"`+name+`":{"services":true}`)
	}
	groups = append(groups, `"zz-sso":{"type":"jwt","algorithm":"HS256","secret":"the-secret","sources":["header:Authorization"],"claims":{"role":"dev"}}`)
	perms = append(perms, `"zz-sso":{"services":"7000-7999"}`)
	return `{"project":"p1","container":"c1","groups":{` + strings.Join(groups, ",") + `},"permissions":{` + strings.Join(perms, ",") + `}}`
}

type benchGW struct {
	url string
}

func serveGW(b *testing.B, backend string, auth gateway.Authorizer) benchGW {
	g := gateway.New(gateway.Config{Domain: "localhost", Known: []string{"notes"},
		Backend:    func(string) (string, bool) { return backend, true },
		Authorizer: auth, Logger: quietLog()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Serve(ln) }()
	b.Cleanup(func() {
		_ = g.Shutdown(context.Background())
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.Error(err)
		}
	})
	return benchGW{url: "http://" + ln.Addr().String() + "/_/notes/health"}
}

func benchSetup(b *testing.B) (bare, doc benchGW, token string) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	b.Cleanup(up.Close)
	backend := strings.TrimPrefix(up.URL, "http://")
	path := filepath.Join(b.TempDir(), "perm.json")
	if err := os.WriteFile(path, []byte(doc50()), 0o600); err != nil {
		b.Fatal(err)
	}
	a, err := access.New(access.Config{PermissionsFile: path, Journal: discard{}, Port: func(string) int { return 7711 }})
	if err != nil {
		b.Fatal(err)
	}
	if n := len(a.Policy().Groups); n != 50 {
		b.Fatalf("%d groups", n)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "dev1", "role": "dev",
		"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("the-secret"))
	if err != nil {
		b.Fatal(err)
	}
	return serveGW(b, backend, open{}), serveGW(b, backend, a), "Bearer " + tok
}

func hit(b *testing.B, c *http.Client, url, auth string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", auth)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %d", url, resp.StatusCode)
	}
}

func pct(d []time.Duration, p float64) float64 {
	slices.Sort(d)
	return float64(d[int(float64(len(d)-1)*p)].Microseconds())
}

// BenchmarkGatewayLatency: one keep-alive client alternates requests to
// the bare gateway and to one enforcing the 50-group document (the token
// matches the last group), so both see the same machine load; it reports
// p50 and p99 of each and the p99 overhead.
//
//	go test -run '^$' -bench GatewayLatency -benchtime 20000x -count 5 ./agent/access/
func BenchmarkGatewayLatency(b *testing.B) {
	bare, doc, tok := benchSetup(b)
	c := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	for range 200 { // warm connections and pools
		hit(b, c, bare.url, tok)
		hit(b, c, doc.url, tok)
	}
	lb := make([]time.Duration, 0, b.N)
	ld := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		hit(b, c, bare.url, tok)
		t1 := time.Now()
		hit(b, c, doc.url, tok)
		lb = append(lb, t1.Sub(t0))
		ld = append(ld, time.Since(t1))
	}
	b.StopTimer()
	b50, b99, d50, d99 := pct(lb, .5), pct(lb, .99), pct(ld, .5), pct(ld, .99)
	b.ReportMetric(b50, "bare-p50-µs")
	b.ReportMetric(b99, "bare-p99-µs")
	b.ReportMetric(d50, "doc50-p50-µs")
	b.ReportMetric(d99, "doc50-p99-µs")
	b.ReportMetric(d99-b99, "p99-overhead-µs")
}

// BenchmarkGatewayThroughput: 8 parallel keep-alive clients per
// sub-benchmark, bare gateway and 50-group document, in one run.
//
//	go test -run '^$' -bench GatewayThroughput -cpu 2 -count 5 ./agent/access/
func BenchmarkGatewayThroughput(b *testing.B) {
	bare, doc, tok := benchSetup(b)
	for _, tc := range []struct {
		name string
		gw   benchGW
	}{{"bare", bare}, {"doc50", doc}} {
		b.Run(tc.name, func(b *testing.B) {
			tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					hit(b, c, tc.gw.url, tok)
				}
			})
		})
	}
}

// BenchmarkEvaluate50: the evaluator alone on the 50-group document.
//
//	go test -run '^$' -bench Evaluate50 -count 5 ./agent/access/
func BenchmarkEvaluate50(b *testing.B) {
	path := filepath.Join(b.TempDir(), "perm.json")
	if err := os.WriteFile(path, []byte(doc50()), 0o600); err != nil {
		b.Fatal(err)
	}
	a, err := access.New(access.Config{PermissionsFile: path, Journal: discard{}, Port: func(string) int { return 7711 }})
	if err != nil {
		b.Fatal(err)
	}
	tok, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"role": "dev"}).SignedString([]byte("the-secret"))
	hdr := map[string]string{"Authorization": "Bearer " + tok}
	r := gateway.Request{Method: "GET", Path: "/_/notes/health", RemoteIP: net.ParseIP("203.0.113.9"), Header: func(n string) string { return hdr[n] }}
	b.ReportAllocs()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := a.Authorize(r, gateway.Target{Service: "notes"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(pct(lat, .5), "p50-µs")
	b.ReportMetric(pct(lat, .99), "p99-µs")
}
