package docker_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"deckhand/control/runtime"
	"deckhand/control/runtime/runtimetest"
)

// BenchmarkState measures, on dockerd, a pause and a resume (the resume
// until the container answers HTTP again), a snapshot of a container
// with 100 MiB of changed files (50 MiB in its filesystem, 50 MiB in its
// workspace), and a fork of five containers from that snapshot until all
// five answer HTTP; it reports the medians.
//
//	go test -run '^$' -bench State -benchtime 5x ./control/runtime/docker/
func BenchmarkState(b *testing.B) {
	host := runtimetest.DockerHost(b)
	image := runtimetest.ImportImage(b, host)
	inst := "rt-" + runtimetest.RandomName()
	d := newDriver(b, host, inst)
	defer d.Close()
	ctx := context.Background()
	spec := func(id, img string) runtime.Spec {
		return runtime.Spec{ID: id, ProjectID: "bench", Image: img, Args: runtimetest.Args(),
			Files: []runtime.File{{Path: runtimetest.TokenPath, Content: []byte("agt_bench")}}}
	}
	src := "src-" + runtimetest.RandomName()
	if err := d.Create(ctx, spec(src, image)); err != nil {
		b.Fatal(err)
	}
	if err := d.Start(ctx, src); err != nil {
		b.Fatal(err)
	}
	addr := runtimetest.WaitState(b, d, src, runtime.StateRunning).Addr
	waitReady(b, addr)
	runtimetest.Shell(b, addr, "dd if=/dev/urandom of=/opt.bin bs=1M count=50 2>/dev/null; dd if=/dev/urandom of=/home/user/ws.bin bs=1M count=50 2>/dev/null; sync")
	var pause, resume, snap, fork []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := d.Pause(ctx, src); err != nil {
			b.Fatal(err)
		}
		pause = append(pause, time.Since(t0))
		t0 = time.Now()
		if err := d.Resume(ctx, src); err != nil {
			b.Fatal(err)
		}
		waitReady(b, addr)
		resume = append(resume, time.Since(t0))

		sid := "s" + strconv.Itoa(i) + runtimetest.RandomName()
		t0 = time.Now()
		sn, err := d.Snapshot(ctx, src, sid)
		if err != nil {
			b.Fatal(err)
		}
		snap = append(snap, time.Since(t0))

		t0 = time.Now()
		var wg sync.WaitGroup
		ids := make([]string, 5)
		errs := make(chan error, 5)
		for k := range ids {
			ids[k] = "fork-" + strconv.Itoa(k) + "-" + runtimetest.RandomName()
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				if err := d.Create(ctx, spec(id, sn.Image)); err != nil {
					errs <- err
					return
				}
				errs <- d.Start(ctx, id)
			}(ids[k])
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		for _, id := range ids {
			waitReady(b, runtimetest.WaitState(b, d, id, runtime.StateRunning).Addr)
		}
		fork = append(fork, time.Since(t0))

		b.StopTimer()
		for _, id := range ids {
			if err := d.Delete(ctx, id, false); err != nil {
				b.Fatal(err)
			}
		}
		if err := d.DeleteSnapshot(ctx, sid); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(ms(median(pause)), "pause-p50-ms")
	b.ReportMetric(ms(median(resume)), "resume-ready-p50-ms")
	b.ReportMetric(ms(median(snap)), "snapshot-100MiB-p50-ms")
	b.ReportMetric(ms(median(fork)), "fork5-ready-p50-ms")
	if err := d.Delete(ctx, src, false); err != nil {
		b.Fatal(err)
	}
}
