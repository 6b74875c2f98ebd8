//go:build kube

package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	corev1 "k8s.io/api/core/v1"

	"deckhand/control/controltest"
	"deckhand/control/runtime"
	"deckhand/control/runtime/kubernetes"
	"deckhand/control/runtime/kubernetes/kubetest"
	"deckhand/control/runtime/runtimetest"
	"deckhand/platform/platformtest"
)

var (
	cluster  *kubetest.Cluster
	agentBin string // the static deckhand agent the control plane's image carries
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		repo, _ := filepath.Abs("../../..")
		if err := kubetest.Build(repo); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		bin, cleanup, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		agentBin = bin
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c, err := kubetest.Start(ctx, 71)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer c.Stop()
		cluster = c
		// One run: the control plane's domains are tested on both store
		// engines elsewhere; here the runtime is what is under test.
		return controltest.RunOnce(m)
	}())
}

// image imports the suite's image into the node and removes it after.
func image(t *testing.T) string { return imageB(t) }

// imageB is image for a test or a benchmark.
func imageB(t testing.TB) string {
	t.Helper()
	rootfs, err := runtimetest.ImageTar()
	if err != nil {
		t.Fatal(err)
	}
	ref := "deckhand-runtimetest/busybox:" + runtimetest.RandomName()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cluster.ImportImage(ctx, ref, rootfs, runtimetest.Entrypoint); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.RemoveImage(context.Background(), ref) })
	return nodeHas(t, ref)
}

// nodeHas waits until the node reports image ref in its status, which the
// driver reads, and answers ref.
func nodeHas(t testing.TB, ref string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := newDriver(t, "img-probe")
	deadline := time.Now().Add(time.Minute)
	for {
		if ok, err := d.ImageExists(ctx, ref); err == nil && ok {
			return ref
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node never reported image %s", ref)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func newDriver(t testing.TB, inst string) *kubernetes.Driver {
	t.Helper()
	d, err := kubernetes.New(kubernetes.Options{Config: cluster.Config, Namespace: kubetest.Namespace, Installation: inst,
		StorageClass: kubetest.StorageClass, WorkspaceSize: "64Mi", PullPolicy: corev1.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := purge(ctx, inst); err != nil {
			t.Errorf("purge installation %s: %v", inst, err)
		}
	})
	return d
}

// leftovers names the objects of an installation (and of container id
// when it is not empty) the API still holds.
func leftovers(ctx context.Context, inst, id string) ([]string, error) {
	return leftoversIn(ctx, kubetest.Namespace, inst, id)
}

// leftoversIn is leftovers in namespace ns.
func leftoversIn(ctx context.Context, ns, inst, id string) ([]string, error) {
	sel := runtime.LabelInstallation + "=" + inst
	if id != "" {
		sel += "," + runtime.LabelContainer + "=" + id
	}
	opts := metav1.ListOptions{LabelSelector: sel}
	api := cluster.Client.CoreV1()
	var out []string
	pods, err := api.Pods(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		out = append(out, "pod "+p.Name)
	}
	svcs, err := api.Services(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		out = append(out, "service "+s.Name)
	}
	secs, err := api.Secrets(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range secs.Items {
		out = append(out, "secret "+s.Name)
	}
	pvcs, err := api.PersistentVolumeClaims(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, p := range pvcs.Items {
		out = append(out, "volume "+p.Name)
	}
	return out, nil
}

// purge deletes every object of an installation.
func purge(ctx context.Context, inst string) error {
	return purgeIn(ctx, kubetest.Namespace, inst)
}

// purgeIn is purge in namespace ns.
func purgeIn(ctx context.Context, ns, inst string) error {
	opts := metav1.ListOptions{LabelSelector: runtime.LabelInstallation + "=" + inst}
	api := cluster.Client.CoreV1()
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if err := api.Pods(ns).DeleteCollection(ctx, del, opts); err != nil {
		return err
	}
	svcs, err := api.Services(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, s := range svcs.Items {
		if err := api.Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	if err := api.Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, opts); err != nil {
		return err
	}
	return api.PersistentVolumeClaims(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, opts)
}

func TestKubernetes(t *testing.T) {
	img := image(t)
	runtimetest.Run(t, runtimetest.Target{
		New: func(t *testing.T, inst string) runtime.Driver { return newDriver(t, inst) },
		Unreachable: func(t *testing.T) runtime.Driver {
			d, err := kubernetes.New(kubernetes.Options{Config: &rest.Config{Host: "https://127.0.0.1:1", Timeout: 2 * time.Second},
				Installation: "rt-down", PullPolicy: corev1.PullNever})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Image:     img,
		Leftovers: leftovers,
	})
}
