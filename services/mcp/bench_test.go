package mcp_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolRoundTrip measures, through the gateway and in one run,
// a tool call's round trip for the no-op tool (mcp_ping) and for
// process_run of /bin/true, against the process service's own REST call
// (POST /_/process/api/v1/process/run) for the same command, and that
// call straight to the process service's port (the hop a tool makes).
// Each reports
// p50-us and p99-us; added-p50-us (on process_run) is its p50 less the
// REST call's, the cost the MCP layer adds (scripts/bench/mcp.sh).
func BenchmarkToolRoundTrip(b *testing.B) {
	a := startAgent(b, "process,mcp")
	s := connect(b, a.endpoint(), allKey, nil)
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	rest := func() error { return restRun(b, client, a.gw+"/_/process") }
	direct := func() error { return restRun(b, client, "http://127.0.0.1:"+strconv.Itoa(a.base+15)) }
	tool := func(name string, args any) func() error {
		return func() error {
			res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err == nil && res.IsError {
				b.Fatalf("%s: %s", name, text(res))
			}
			return err
		}
	}
	// Every case runs with the process service in its steady state: past
	// --process-max-finished (1000) finished processes, each run's end
	// also evicts the oldest. Without this the first case's first thousand
	// calls skip that work and the later cases' do not.
	for range 1000 + 20 {
		if err := rest(); err != nil {
			b.Fatal(err)
		}
	}
	benchLatencies(b, "rest-process-run-true", []string{"mcp-process_run-true"}, []latencyCase{
		{"rest-process-run-true", rest},
		{"direct-process-run-true", direct},
		{"mcp-process_run-true", tool("process_run", map[string]any{"cmd": []string{"/bin/true"}})},
		{"mcp-ping", tool("mcp_ping", map[string]any{})},
	})
}

// restRun runs /bin/true with the process service's REST call at base.
func restRun(b *testing.B, client *http.Client, base string) error {
	req, _ := http.NewRequest("POST", base+"/api/v1/process/run", strings.NewReader(`{"cmd":["/bin/true"]}`))
	req.Header.Set("X-Key", allKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("REST run at %s: %d", base, resp.StatusCode)
	}
	return nil
}

// latencyCase is one call a round-trip benchmark times.
type latencyCase struct {
	name string
	call func() error
}

// benchLatencies runs each case as a sub-benchmark: 20 warm-up calls, then
// b.N timed ones, reporting p50 and p99; a case named in addedTo also
// reports its p50 above the baseline case's.
func benchLatencies(b *testing.B, baseline string, addedTo []string, cases []latencyCase) {
	var baseP50 float64
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			for range 20 { // warm connections and caches
				if err := bc.call(); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if err := bc.call(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			p50 := float64(lat[len(lat)/2].Microseconds())
			b.ReportMetric(p50, "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
			switch {
			case bc.name == baseline:
				baseP50 = p50
			case slices.Contains(addedTo, bc.name):
				b.ReportMetric(p50-baseP50, "added-p50-us")
			}
		})
	}
}
