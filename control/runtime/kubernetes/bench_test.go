//go:build kube

package kubernetes_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"deckhand/control/runtime"
	"deckhand/control/runtime/runtimetest"
)

// BenchmarkCreateRunning times create → start → the gateway answering
// HTTP on the test cluster, then deletes the container (not timed).
// p50-ms and p95-ms are per container.
//
//	make build; go test -tags kube -run '^$' -bench CreateRunning -benchtime 10x ./control/runtime/kubernetes/
func BenchmarkCreateRunning(b *testing.B) {
	img := imageB(b)
	d := newDriver(b, "bench-"+runtimetest.RandomName())
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		id := "bench-" + runtimetest.RandomName()
		spec := runtime.Spec{ID: id, ProjectID: "prj", Image: img, Args: runtimetest.Args(),
			Resources: runtime.Resources{CPUs: 0.5, MemoryMB: 64},
			Files:     []runtime.File{{Path: runtimetest.TokenPath, Content: []byte("agt_x"), Mode: 0o400}}}
		start := time.Now()
		if err := d.Create(ctx, spec); err != nil {
			b.Fatal(err)
		}
		if err := d.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		st := runtimetest.WaitState(b, d, id, runtime.StateRunning)
		runtimetest.WaitHTTP(b, st.Addr)
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err := d.Delete(ctx, id, false); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Milliseconds()), "p95-ms")
}
