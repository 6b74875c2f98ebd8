package docker_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"deckhand/control/runtime"
	"deckhand/control/runtime/runtimetest"
)

// BenchmarkCreateReady measures create → HTTP-ready of the suite's
// busybox image through the driver, beside a bare engine create + start
// of the same image with the same arguments on the same network, in the
// same run; it reports the medians of both and their difference. The
// driver's container carries its token file and workspace volume; neither
// has limits, which are the user's choice, not the driver's cost.
//
//	go test -run '^$' -bench CreateReady -benchtime 10x ./control/runtime/docker/
func BenchmarkCreateReady(b *testing.B) {
	b.Run("docker", func(b *testing.B) { benchCreateReady(b, runtimetest.DockerHost(b)) })
	b.Run("podman", func(b *testing.B) { benchCreateReady(b, runtimetest.Podman(b)) })
}

func benchCreateReady(b *testing.B, host string) {
	image := runtimetest.ImportImage(b, host)
	inst := "rt-" + runtimetest.RandomName()
	d := newDriver(b, host, inst)
	defer d.Close()
	cli := runtimetest.Client(b, host)
	ctx := context.Background()
	// One create first, so the network exists for both paths and neither
	// pays for it in the figures.
	warm := "warm-" + runtimetest.RandomName()
	if err := d.Create(ctx, runtime.Spec{ID: warm, Image: image, Args: runtimetest.Args()}); err != nil {
		b.Fatal(err)
	}
	if err := d.Delete(ctx, warm, false); err != nil {
		b.Fatal(err)
	}
	var viaDriver, bare []time.Duration
	// Phases: create, start (with the inspect that finds the address),
	// and the wait for HTTP, of each path.
	phases := map[string][]time.Duration{}
	lap := func(name string, since *time.Time) {
		now := time.Now()
		phases[name] = append(phases[name], now.Sub(*since))
		*since = now
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := "bench-" + strconv.Itoa(i) + "-" + runtimetest.RandomName()
		t0 := time.Now()
		p := t0
		spec := runtime.Spec{
			ID: id, ProjectID: "bench", Image: image, Args: runtimetest.Args(),
			Files: []runtime.File{{Path: runtimetest.TokenPath, Content: []byte("agt_bench")}},
		}
		if err := d.Create(ctx, spec); err != nil {
			b.Fatal(err)
		}
		lap("driver-create", &p)
		if err := d.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		st, err := d.Inspect(ctx, id)
		if err != nil || st.Addr == "" {
			b.Fatalf("inspect after start: %+v, %v", st, err)
		}
		lap("driver-start", &p)
		waitReady(b, st.Addr)
		lap("driver-ready", &p)
		viaDriver = append(viaDriver, time.Since(t0))

		t0 = time.Now()
		p = t0
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:       "deckhand-" + inst + "-bare-" + id,
			Config:     &container.Config{Image: image, Cmd: runtimetest.Args(), Labels: map[string]string{runtime.LabelInstallation: inst}},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode("deckhand-" + inst)},
		})
		if err != nil {
			b.Fatal(err)
		}
		lap("bare-create", &p)
		if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			b.Fatal(err)
		}
		in, err := cli.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
		if err != nil {
			b.Fatal(err)
		}
		lap("bare-start", &p)
		ep := in.Container.NetworkSettings.Networks["deckhand-"+inst]
		waitReady(b, net.JoinHostPort(ep.IPAddress.String(), strconv.Itoa(runtimetest.GatewayPort)))
		lap("bare-ready", &p)
		bare = append(bare, time.Since(t0))

		b.StopTimer()
		if err := d.Delete(ctx, id, false); err != nil {
			b.Fatal(err)
		}
		if _, err := cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	md, mb := median(viaDriver), median(bare)
	b.ReportMetric(ms(md), "driver-p50-ms")
	b.ReportMetric(ms(mb), "bare-p50-ms")
	b.ReportMetric(ms(md-mb), "overhead-p50-ms")
	for name, ds := range phases {
		b.ReportMetric(ms(median(ds)), name+"-p50-ms")
	}
}

var readyClient = &http.Client{Timeout: time.Second}

// waitReady polls http://addr/ every 5 ms until it answers 200.
func waitReady(b *testing.B, addr string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := readyClient.Get("http://" + addr + "/")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("%s never answered", addr)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
