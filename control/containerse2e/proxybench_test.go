package containerse2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// TestProxyThroughContainer sets the platform proxy beside a real
// container's agent gateway in one run: the same small GET and the same
// 1 GiB download (a sparse file in the container), straight to the
// container's address on the engine's network, through
// `deckhand-control serve --proxy-listen`, and, as the limit of any proxy
// on this machine, through a bare TCP relay in a process of its own (the
// test binary run again: a goroutine copying each way, spliced by the
// kernel) that parses nothing; one after the other, which goes first
// rotating. It logs the ratio of requests (bytes) per second through the
// proxy and through the relay to those straight, and what each adds to
// the 50th and 99th percentiles:
//
//	DECKHAND_BENCH_PROXY=2000 DECKHAND_BIN=$PWD/bin go test -run TestProxyThroughContainer -v ./control/containerse2e/
//
// DECKHAND_BENCH_PROXY is the number of small GETs each way; the 1 GiB
// download runs DECKHAND_BENCH_PROXY_GIB times each way (default 4).
func TestProxyThroughContainer(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("DECKHAND_BENCH_PROXY"))
	if rounds <= 0 {
		t.Skip("a benchmark: set DECKHAND_BENCH_PROXY=N to run it")
	}
	gibRounds := 4
	if n, err := strconv.Atoi(os.Getenv("DECKHAND_BENCH_PROXY_GIB")); err == nil && n >= 0 {
		gibRounds = n
	}
	f, id, urls, proxyAddr, v := proxied(t, "bench", nil)
	tok := data(f.must(201, "POST", "/api/v1/containers/"+id+"/access-tokens", map[string]any{}, f.alice))
	agentURL, _ := tok["agent_url"].(string)
	au, err := url.Parse(agentURL)
	if err != nil || au.Host == "" {
		t.Fatalf("the access token names no agent address: %v", tok)
	}
	direct := au.Host
	const size = 1 << 30
	v.sh(urls["process"], "truncate -s "+strconv.Itoa(size)+" /tmp/big && chmod 644 /tmp/big")

	// One client per way, each keeping its connection alive; the Host
	// names the container and the service either way, so the agent's
	// gateway routes and judges both alike.
	client := func(addr string) *http.Client {
		d := &net.Dialer{Timeout: 10 * time.Second}
		tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	ways := [3]*http.Client{client(direct), client(proxyAddr), client(relay(t, direct))}
	names := [3]string{"direct", "proxy", "relay"}
	buf := make([]byte, 256<<10)
	get := func(cl *http.Client, rawURL string) int64 {
		req, _ := http.NewRequest(http.MethodGet, rawURL, nil)
		req.Header.Set("Authorization", v.bearer)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.CopyBuffer(onlyWriter{io.Discard}, resp.Body, buf)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("GET %s: %d %v", rawURL, resp.StatusCode, err)
		}
		return n
	}
	run := func(name, rawURL string, n int, size int64) {
		var lat [3][]time.Duration
		var total [3]time.Duration
		for k := range ways { // warm both ways' connections
			get(ways[k], rawURL)
		}
		for i := 0; i < n; i++ {
			for j := range ways {
				k := (j + i) % len(ways)
				start := time.Now()
				if got := get(ways[k], rawURL); size > 0 && got != size {
					t.Fatalf("%s: %d bytes, want %d", name, got, size)
				}
				d := time.Since(start)
				lat[k] = append(lat[k], d)
				total[k] += d
			}
		}
		for k := range lat {
			sort.Slice(lat[k], func(i, j int) bool { return lat[k][i] < lat[k][j] })
		}
		p := func(k int, q float64) time.Duration { return lat[k][int(float64(len(lat[k])-1)*q)] }
		line := name + ":"
		for k := 1; k < len(ways); k++ {
			line += " " + names[k] + "/direct " + strconv.FormatFloat(float64(total[0])/float64(total[k]), 'f', 2, 64) +
				" (p50 " + p(k, 0.5).String() + ", added " + (p(k, 0.5) - p(0, 0.5)).String() +
				"; p99 " + p(k, 0.99).String() + ", added " + (p(k, 0.99) - p(0, 0.99)).String() + ");"
		}
		line += " direct p50 " + p(0, 0.5).String() + ", p99 " + p(0, 0.99).String()
		if size > 0 {
			for k := range ways {
				line += "; " + names[k] + " " + strconv.FormatFloat(float64(size)*float64(n)/total[k].Seconds()/1e6, 'f', 0, 64) + " MB/s"
			}
		}
		t.Logf("%s; %d each way; load %s", line, n, loadAverage())
	}
	run("small GET", urls["files"]+"/api/v1/files/stat?path=/", rounds, 0)
	if gibRounds > 0 {
		run("1 GiB", urls["files"]+"/api/v1/files/content?path=/tmp/big", gibRounds, size)
	}
}

// relayEnv names the address a relay process copies to (TestMain).
const relayEnv = "DECKHAND_TEST_RELAY_TO"

// relay starts a relay process to addr and answers its address.
func relay(t *testing.T, addr string) string {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), relayEnv+"="+addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the relay process: %v", err)
	}
	return strings.TrimSpace(line)
}

// serveRelay listens on loopback, prints its address and relays each
// connection to addr (platformtest.Relay) until killed.
func serveRelay(addr string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	platformtest.Relay(ln, addr)
}

// onlyWriter hides its Writer's ReadFrom, so io.CopyBuffer uses the
// buffer, as a download client reads.
type onlyWriter struct{ io.Writer }

// loadAverage is the machine's 1-minute load average, for the log.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
