package egress_test

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"deckhand/platform/netconf"
	"deckhand/platform/platformtest/netlab"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// curlW runs curl in the container with -w format and returns its output.
func (w *world) curlW(b testing.TB, format string, args ...string) string {
	b.Helper()
	code, out, errOut := w.Curl(append([]string{"-o", "/dev/null", "-w", format}, args...)...)
	if code != 0 {
		b.Fatalf("curl %v: exit %d %s", args, code, errOut)
	}
	return out
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func pct(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// BenchmarkEgress measures, in one run with the paths interleaved, a
// download from the lab's target host (EGRESS_BENCH_BYTES, default 256
// MiB, EGRESS_BENCH_ROUNDS rounds) and the time to the first response
// byte of EGRESS_BENCH_CONNECTS fresh connections (one curl process
// each) over three paths from the container namespace: direct (no rules), curl
// through dante itself (--socks5, no rules), and through the agent's
// rules and forwarder to the same dante; every other round in reverse
// order, and the forwarder's ratio to curl --socks5 is also given round by
// round (the two ran next to each other). It logs the table the benchmark
// section of BENCHMARKS.md quotes. Root, Linux, dante-server.
//
//	go test -run '^$' -bench Egress -benchtime 1x ./agent/egress/
func BenchmarkEgress(b *testing.B) {
	size := envInt("EGRESS_BENCH_BYTES", 256<<20)
	rounds := envInt("EGRESS_BENCH_ROUNDS", 5)
	connects := envInt("EGRESS_BENCH_CONNECTS", 500)
	w := newWorld(b)
	e := startEngine(b, w.Lab, w.Container, nil)
	socks := fmt.Sprintf("%s:%s@%s:%d", socksUser, socksPass, netlab.ProxyAddr, netlab.SOCKSPort)
	stopped := func() *netconf.Document { d := socksDoc(1); d.Running = false; return d }
	bulk := "http://" + netlab.TargetAddr + "/?bytes=" + strconv.Itoa(size)
	small := "http://" + netlab.TargetAddr + "/"
	type path struct {
		name string
		doc  *netconf.Document
		args []string
	}
	paths := []path{
		{"direct (no rules)", stopped(), nil},
		{"curl --socks5 to dante (no rules)", stopped(), []string{"--socks5", socks}},
		{"agent forwarder → dante", socksDoc(1), nil},
	}
	rate := make([][]float64, len(paths))
	var fwdCPU, fwdMiB float64 // the engine process's CPU over forwarded bulk
	ttfb := make([][]float64, len(paths))
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for r := 0; r < rounds; r++ {
			// Every other round runs the paths in reverse, so a load that
			// rises or falls through a round weighs on each path alike.
			for k := range paths {
				i := k
				if r%2 == 1 {
					i = len(paths) - 1 - k
				}
				p := paths[i]
				e.apply(p.doc)
				c0 := procCPU(e.proc.Pid())
				out := w.curlW(b, "%{speed_download}\n", append(append([]string{}, p.args...), bulk)...)
				if p.doc.Running {
					fwdCPU += procCPU(e.proc.Pid()) - c0
					fwdMiB += float64(size) / (1 << 20)
				}
				v, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
				rate[i] = append(rate[i], v/(1<<20))
			}
		}
		// Latency: a fresh curl process per connection (curl reuses a
		// proxy connection across URLs of one run), in batches of 50 with
		// the paths interleaved; time_starttransfer is the connect, the
		// proxy handshake and the request up to the first response byte.
		for done := 0; done < connects; done += 50 {
			batch := min(50, connects-done)
			for i, p := range paths {
				e.apply(p.doc)
				curl := "curl -sS -o /dev/null -w '%{time_starttransfer}\\n' " + strings.Join(quoteAll(p.args), " ") + " " + small
				out, err := w.Exec(w.Container, "sh", "-c", "for i in $(seq "+strconv.Itoa(batch)+"); do "+curl+" || exit 1; done").Output()
				if err != nil {
					b.Fatalf("%s: %v %s", p.name, err, out)
				}
				for _, line := range strings.Fields(string(out)) {
					v, _ := strconv.ParseFloat(line, 64)
					ttfb[i] = append(ttfb[i], v*1e3)
				}
			}
		}
	}
	b.StopTimer()
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d × %d MiB, %d fresh connections per path (nproc %s)\n", rounds, size>>20, connects, os.Getenv("NPROC"))
	fmt.Fprintf(&sb, "| path | median MiB/s | min | max | vs curl --socks5 |\n|---|---|---|---|---|\n")
	ref := median(rate[1])
	for i, p := range paths {
		s := append([]float64(nil), rate[i]...)
		sort.Float64s(s)
		fmt.Fprintf(&sb, "| %s | %.0f | %.0f | %.0f | %.2f× |\n", p.name, median(s), s[0], s[len(s)-1], median(s)/ref)
	}
	// The forwarder against curl through the proxy round by round: the
	// two ran next to each other, under the same load.
	var perRound []float64
	for r := range rate[1] {
		perRound = append(perRound, rate[2][r]/rate[1][r])
	}
	sorted := append([]float64(nil), perRound...)
	sort.Float64s(sorted)
	fmt.Fprintf(&sb, "forwarder / curl --socks5 per round: median %.2f× (min %.2f×, max %.2f×; rounds %s)\n", median(perRound), sorted[0], sorted[len(sorted)-1], fmtAll(perRound))
	fmt.Fprintf(&sb, "forwarder CPU (the engine process, user+system): %.2f ms per MiB\n", fwdCPU*1e3/fwdMiB)
	fmt.Fprintf(&sb, "| path | p50 ms | p90 ms | p99 ms | added p50 | added p99 (vs curl --socks5) |\n|---|---|---|---|---|---|\n")
	for i, p := range paths {
		fmt.Fprintf(&sb, "| %s | %.3f | %.3f | %.3f | %+.3f | %+.3f |\n", p.name, pct(ttfb[i], .5), pct(ttfb[i], .9), pct(ttfb[i], .99),
			pct(ttfb[i], .5)-pct(ttfb[1], .5), pct(ttfb[i], .99)-pct(ttfb[1], .99))
	}
	fmt.Fprint(os.Stderr, sb.String())
	b.ReportMetric(median(rate[2])/ref, "fwd/socks5-throughput")
	b.ReportMetric(median(perRound), "fwd/socks5-per-round")
	b.ReportMetric(pct(ttfb[2], .99)-pct(ttfb[1], .99), "added-p99-ms")
}

func fmtAll(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(out, " ")
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

// procCPU is a process's user+system CPU seconds so far.
func procCPU(pid int) float64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	sys, _ := strconv.ParseFloat(f[12], 64)
	return (u + sys) / 100 // USER_HZ
}
