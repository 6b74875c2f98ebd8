package platformtest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time (user and system) this process has used so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the CPU time used since start per iteration as
// cpu-ns/op: on a machine other jobs share, wall time per op swings with
// their load, CPU time per op much less.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPUTime()-start)/float64(b.N), "cpu-ns/op")
}
