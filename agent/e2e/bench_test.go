package e2e_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// Figures, not assertions: run with
//
//	go test -run '^$' -bench . -benchtime 20x ./agent/e2e/
//
// and read median-ms / median-MiB.

var modes = []struct {
	name string
	args []string
}{
	{"in-process", nil},
	{"isolated", []string{"--isolate", "cron,files"}},
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// BenchmarkColdStart: from exec of `deckhand run` to the gateway reporting
// every service running and answering /health.
func BenchmarkColdStart(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			var ms []float64
			for range b.N {
				t0 := time.Now()
				a := start(b, m.args...)
				a.waitFor(b, "every service running", allRunning)
				ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
				a.stop(b)
			}
			b.ReportMetric(median(ms), "median-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkIdleRSS: resident memory of the agent and all its children after
// two idle seconds. "with-display" runs the deckhand-display child on an
// Xvfb (when `make build` put it beside deckhand, see DECKHAND_BIN).
func BenchmarkIdleRSS(b *testing.B) {
	all := append(modes[:len(modes):len(modes)], struct {
		name string
		args []string
	}{"with-display", nil})
	for _, m := range all {
		b.Run(m.name, func(b *testing.B) {
			if m.name == "with-display" {
				if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
					b.Skip("deckhand-display is not beside deckhand")
				}
				m.args = []string{"--display", platformtest.StartXvfb(b, "640x480x24")}
			}
			var mib []float64
			for range b.N {
				a := start(b, m.args...)
				a.ready(b)
				time.Sleep(2 * time.Second)
				pid := a.cmd.Process.Pid
				total := vmRSS(pid)
				for _, p := range allPIDs() {
					if ppid, _, _, ok := procInfo(p); ok && ppid == pid {
						total += vmRSS(p)
					}
				}
				mib = append(mib, float64(total)/(1<<20))
				a.stop(b)
			}
			b.ReportMetric(median(mib), "median-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}
}
