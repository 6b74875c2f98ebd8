//go:build kube

package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"deckhand/control/runtime"
	"deckhand/control/runtime/kubernetes/kubetest"
	"deckhand/control/runtime/runtimetest"
)

// benchSpec is a small container of the suite's image. Its CPU limit is a
// quarter of a CPU, so its request (a tenth of that) lets 50 fit on the
// test cluster's node of 2 CPUs, as the scheduler counts requests.
func benchSpec(id, img string) runtime.Spec {
	return runtime.Spec{ID: id, ProjectID: "prj", Image: img, Args: runtimetest.Args(),
		Resources: runtime.Resources{CPUs: 0.25, MemoryMB: 64},
		Files:     []runtime.File{{Path: runtimetest.TokenPath, Content: []byte("agt_x"), Mode: 0o400}}}
}

// BenchmarkWatchLatency deletes a running container's Pod behind the
// driver's back (straight through the API, as an operator or an eviction
// would) and times until the driver's Watch reports the container out of
// running. p50-ms and p95-ms are per deletion.
//
//	go test -tags kube -run '^$' -bench WatchLatency -benchtime 10x ./control/runtime/kubernetes/
func BenchmarkWatchLatency(b *testing.B) {
	img := imageB(b)
	d := newDriver(b, "watch-"+runtimetest.RandomName())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := d.Watch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		id := "watch-" + runtimetest.RandomName()
		if err := d.Create(ctx, benchSpec(id, img)); err != nil {
			b.Fatal(err)
		}
		if err := d.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		runtimetest.WaitState(b, d, id, runtime.StateRunning)
		// Drain what the watch said so far, up to its running.
		for drained := false; !drained; {
			select {
			case ev := <-events:
				drained = ev.ContainerID == id && ev.State == runtime.StateRunning
			case <-time.After(30 * time.Second):
				b.Fatalf("the watch never said %s runs", id)
			}
		}
		pods, err := cluster.Client.CoreV1().Pods(kubetest.Namespace).List(ctx,
			metav1.ListOptions{LabelSelector: runtime.LabelContainer + "=" + id})
		if err != nil || len(pods.Items) != 1 {
			b.Fatalf("pods of %s: %v (%d)", id, err, len(pods.Items))
		}
		zero := int64(0)
		b.StartTimer()
		start := time.Now()
		if err := cluster.Client.CoreV1().Pods(kubetest.Namespace).Delete(ctx, pods.Items[0].Name,
			metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			b.Fatal(err)
		}
		for seen := false; !seen; {
			select {
			case ev := <-events:
				seen = ev.ContainerID == id && ev.State != runtime.StateRunning
			case <-time.After(30 * time.Second):
				b.Fatalf("the watch never noticed %s's Pod gone", id)
			}
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err := d.Delete(ctx, id, false); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Milliseconds()), "p95-ms")
}

// BenchmarkConcurrentCreate creates DECKHAND_KUBE_CONCURRENT containers
// (50 unless set) at once, times until every one runs and answers HTTP,
// then deletes them all and fails if the API still holds any Pod, claim,
// Service or Secret of the installation.
//
//	go test -tags kube -run '^$' -bench ConcurrentCreate -benchtime 1x -timeout 30m ./control/runtime/kubernetes/
func BenchmarkConcurrentCreate(b *testing.B) {
	n := 50
	if v, err := strconv.Atoi(os.Getenv("DECKHAND_KUBE_CONCURRENT")); err == nil && v > 0 {
		n = v
	}
	img := imageB(b)
	inst := "many-" + runtimetest.RandomName()
	d := newDriver(b, inst)
	ctx := context.Background()
	var all []time.Duration
	for i := 0; i < b.N; i++ {
		ids := make([]string, n)
		lat := make([]time.Duration, n)
		errs := make([]error, n)
		start := time.Now()
		var wg sync.WaitGroup
		for j := range ids {
			ids[j] = fmt.Sprintf("many-%d-%s", j, runtimetest.RandomName())
			wg.Add(1)
			go func(j int) {
				defer wg.Done()
				id := ids[j]
				if err := d.Create(ctx, benchSpec(id, img)); err != nil {
					errs[j] = err
					return
				}
				if err := d.Start(ctx, id); err != nil {
					errs[j] = err
					return
				}
				deadline := time.Now().Add(10 * time.Minute)
				for {
					st, err := d.Inspect(ctx, id)
					if err == nil && st.State == runtime.StateRunning && st.Addr != "" {
						break
					}
					if time.Now().After(deadline) {
						errs[j] = fmt.Errorf("%s never ran: %+v %v", id, st, err)
						return
					}
					time.Sleep(250 * time.Millisecond)
				}
				lat[j] = time.Since(start)
			}(j)
		}
		wg.Wait()
		b.StopTimer()
		for j, id := range ids {
			if errs[j] == nil {
				st, _ := d.Inspect(ctx, id)
				runtimetest.WaitHTTP(b, st.Addr)
			}
		}
		var wgd sync.WaitGroup
		for _, id := range ids {
			wgd.Add(1)
			go func(id string) {
				defer wgd.Done()
				if err := d.Delete(ctx, id, false); err != nil {
					b.Errorf("delete %s: %v", id, err)
				}
			}(id)
		}
		wgd.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		left, err := leftovers(ctx, inst, "")
		if err != nil || len(left) > 0 {
			b.Fatalf("left after deleting %d containers: %v %v", n, left, err)
		}
		all = append(all, lat...)
		b.StartTimer()
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(all[len(all)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(all[len(all)-1].Milliseconds()), "all-running-ms")
}
