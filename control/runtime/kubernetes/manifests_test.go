//go:build kube

package kubernetes_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"deckhand/control/runtime"
	"deckhand/control/runtime/kubernetes"
	"deckhand/control/runtime/kubernetes/kubetest"
	"deckhand/control/runtime/runtimetest"
)

// apply creates every object of a manifest file; with dryRun the API
// server validates and admits them and stores nothing.
func apply(t *testing.T, file string, dryRun bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../../../packaging/kubernetes", file))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	opts := metav1.CreateOptions{FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	n := 0
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", file, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %s: %v", file, gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
		}
		if _, err := ri.Create(context.Background(), &obj, opts); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %s %s: %v", file, gvk.Kind, obj.GetName(), err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("%s holds no object", file)
	}
}

// TestManifestsAndTheRole applies packaging/kubernetes to the API server
// (the control plane's Deployment as a dry run: its image is not on the
// node) and runs a container through the driver as the control plane's
// service account, so the Role is proven to be enough.
func TestManifestsAndTheRole(t *testing.T) {
	img := image(t)
	apply(t, "namespace.yaml", false)
	apply(t, "rbac.yaml", false)
	apply(t, "networkpolicy.yaml", false)
	apply(t, "control.yaml", true)

	cfg := rest.CopyConfig(cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:deckhand:deckhand-control"}
	inst := "rbac-" + runtimetest.RandomName()
	d, err := kubernetes.New(kubernetes.Options{Config: cfg, Namespace: kubetest.Namespace, Installation: inst,
		StorageClass: kubetest.StorageClass, WorkspaceSize: "64Mi", PullPolicy: corev1.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	newDriver(t, inst) // its cleanup purges the installation
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := "rbac-" + runtimetest.RandomName()
	spec := runtime.Spec{ID: id, ProjectID: "prj", Image: img, Args: runtimetest.Args(),
		Files: []runtime.File{{Path: runtimetest.TokenPath, Content: []byte("agt_x"), Mode: 0o400}}}
	if err := d.Create(ctx, spec); err != nil {
		t.Fatalf("create as the service account: %v", err)
	}
	if err := d.Start(ctx, id); err != nil {
		t.Fatalf("start as the service account: %v", err)
	}
	st := runtimetest.WaitState(t, d, id, runtime.StateRunning)
	runtimetest.WaitHTTP(t, st.Addr)
	events, err := d.Watch(ctx)
	if err != nil {
		t.Fatalf("watch as the service account: %v", err)
	}
	if err := d.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.ContainerID != id || ev.State != runtime.StateExited {
			t.Fatalf("event after stop: %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event after stop")
	}
	// A workspace move's exec into its helper Pod is within the Role.
	r, err := d.ExportWorkspace(ctx, id, img)
	if err != nil {
		t.Fatalf("export the workspace as the service account: %v", err)
	}
	n, rerr := io.Copy(io.Discard, r)
	if cerr := r.Close(); rerr != nil || cerr != nil || n == 0 {
		t.Fatalf("export the workspace as the service account: %d bytes, %v, %v", n, rerr, cerr)
	}
	if err := d.Delete(ctx, id, false); err != nil {
		t.Fatalf("delete as the service account: %v", err)
	}
	if left, err := leftovers(ctx, inst, ""); err != nil || len(left) > 0 {
		t.Fatalf("left: %v %v", left, err)
	}
	// The service account may not act outside its namespace.
	other, err := kubernetes.New(kubernetes.Options{Config: cfg, Namespace: "default", Installation: inst, PullPolicy: corev1.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Create(ctx, runtime.Spec{ID: "outside", Image: img}); !apierrors.IsForbidden(err) {
		t.Fatalf("create in another namespace as the service account: %v, want forbidden", err)
	}
}
