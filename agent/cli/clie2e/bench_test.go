package clie2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkCopy200MB copies 200 MB up and down through the agent's gateway
// with `deckhand cp` (hashing, resumable upload, ranged download, checksum)
// and with curl (one raw PUT, one GET: the same service's plain transfer,
// no hash), and checks the case once: each way killed in the
// middle, resumed by running the command again, hashes equal.
//
//	DECKHAND_BIN=$PWD/bin go test -run '^$' -bench Copy200MB -benchtime 3x ./agent/cli/clie2e/
func BenchmarkCopy200MB(b *testing.B) {
	const size = 200 << 20
	a := startAgent(b, nil, "files,journal")
	p := newProxy(b, a.url)
	u := newUser(b, "DECKHAND_AGENT_URL="+p.URL())
	local, sum := bigFile(b, u.home, size)
	remoteDir := b.TempDir()

	// The check: interrupted once each way, resumed, hashes equal.
	remote := filepath.Join(remoteDir, "resumed.bin")
	fired := p.arm(&fault{pathPrefix: uploads, request: true, after: 80 << 20, stall: true})
	kill := u.startKilled("cp", local, ":"+remote)
	waitOrFatal(b, fired, "the upload to reach 80 MB")
	kill()
	p.release()
	up := u.ok("", "cp", local, ":"+remote, "-o", "json")
	back := filepath.Join(u.home, "resumed.bin")
	fired = p.arm(&fault{pathPrefix: downloads, after: 80 << 20, stall: true})
	kill = u.startKilled("cp", ":"+remote, back)
	waitOrFatal(b, fired, "the download to reach 80 MB")
	waitFor(b, "the partial file", func() bool {
		fi, err := os.Stat(back + ".deckhand-part")
		return err == nil && fi.Size() > 0
	})
	kill()
	p.release()
	down := u.ok("", "cp", ":"+remote, back, "-o", "json")
	if sha256File(b, remote) != sum || sha256File(b, back) != sum {
		b.Fatalf("hashes differ after resumed copies:\n%s\n%s", up, down)
	}
	b.Logf("resumed up: %s", up)
	b.Logf("resumed down: %s", down)

	// Throughput, straight to the gateway.
	u = newUser(b, "DECKHAND_AGENT_URL="+a.url)
	var cliUp, cliDown, curlUp, curlDown []float64
	mbps := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	b.ResetTimer()
	for i := range b.N {
		r := filepath.Join(remoteDir, fmt.Sprintf("cli%d.bin", i))
		l := filepath.Join(u.home, fmt.Sprintf("cli%d.bin", i))
		start := time.Now()
		u.ok("", "cp", local, ":"+r)
		cliUp = append(cliUp, mbps(time.Since(start)))
		start = time.Now()
		u.ok("", "cp", ":"+r, l)
		cliDown = append(cliDown, mbps(time.Since(start)))

		r = filepath.Join(remoteDir, fmt.Sprintf("curl%d.bin", i))
		l = filepath.Join(u.home, fmt.Sprintf("curl%d.bin", i))
		start = time.Now()
		curl(b, "-sSf", "-T", local, a.url+"/_/files/api/v1/files/content?path="+r)
		curlUp = append(curlUp, mbps(time.Since(start)))
		start = time.Now()
		curl(b, "-sSf", "-o", l, a.url+"/_/files/api/v1/files/content?path="+r)
		curlDown = append(curlDown, mbps(time.Since(start)))
		_ = os.Remove(l)
	}
	b.StopTimer()
	b.ReportMetric(median(cliUp), "cp-up-MB/s")
	b.ReportMetric(median(cliDown), "cp-down-MB/s")
	b.ReportMetric(median(curlUp), "curl-up-MB/s")
	b.ReportMetric(median(curlDown), "curl-down-MB/s")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func curl(b *testing.B, args ...string) {
	b.Helper()
	if out, err := exec.Command("curl", args...).CombinedOutput(); err != nil {
		b.Fatalf("curl %v: %v\n%s", args, err, out)
	}
}
