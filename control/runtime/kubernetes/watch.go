package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"deckhand/control/runtime"
)

// Watch implements runtime.Driver with informers on the installation's
// Secrets (the anchors) and Pods: every change recomputes that
// container's state from the informers' caches, and a change of state is
// sent. The channel closes when ctx ends.
func (d *Driver) Watch(ctx context.Context) (<-chan runtime.Event, error) {
	// One list first, so an unreachable cluster answers now.
	if _, err := d.cli.CoreV1().Secrets(d.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: d.selector(""), Limit: 1}); err != nil {
		return nil, apiErr("watch", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(d.cli, 0, informers.WithNamespace(d.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = d.selector("") }))
	secrets := factory.Core().V1().Secrets()
	pods := factory.Core().V1().Pods()
	changed := make(chan string, 256)
	note := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		if id := m.GetLabels()[runtime.LabelContainer]; id != "" {
			select {
			case changed <- id:
			case <-ctx.Done():
			}
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, o any) { note(o) }, DeleteFunc: note}
	if _, err := secrets.Informer().AddEventHandler(h); err != nil {
		return nil, err
	}
	if _, err := pods.Informer().AddEventHandler(h); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	factory.Start(wctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), secrets.Informer().HasSynced, pods.Informer().HasSynced) {
		cancel()
		factory.Shutdown()
		return nil, fmt.Errorf("%w: kubernetes: watch: the caches did not fill", runtime.ErrUnavailable)
	}
	out := make(chan runtime.Event, 64)
	last := map[string]runtime.State{}
	// What exists when the watch starts is its baseline, not news.
	if list, err := secrets.Lister().List(labels.Everything()); err == nil {
		for _, s := range list {
			id := s.Labels[runtime.LabelContainer]
			last[id] = d.cachedStatus(secrets, pods, id).State
		}
	}
	go func() {
		defer close(out)
		defer factory.Shutdown()
		defer cancel()
		for {
			select {
			case <-wctx.Done():
				return
			case id := <-changed:
				st := d.cachedStatus(secrets, pods, id)
				if prev, seen := last[id]; seen && prev == st.State {
					continue
				}
				if st.State == runtime.StateMissing {
					if _, seen := last[id]; !seen {
						continue
					}
					delete(last, id)
				} else {
					last[id] = st.State
				}
				select {
				case out <- runtime.Event{ContainerID: id, State: st.State, Reason: st.Reason}:
				case <-wctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// cachedStatus is status() from the informers' caches.
func (d *Driver) cachedStatus(secrets coreinformers.SecretInformer, pods coreinformers.PodInformer, id string) runtime.Status {
	sec, err := secrets.Lister().Secrets(d.opts.Namespace).Get(d.Name(id))
	if err != nil {
		return runtime.Status{State: runtime.StateMissing}
	}
	sel := labels.SelectorFromSet(labels.Set{runtime.LabelInstallation: d.opts.Installation, runtime.LabelContainer: id})
	list, _ := pods.Lister().Pods(d.opts.Namespace).List(sel)
	ps := make([]corev1.Pod, 0, len(list))
	for _, p := range list {
		ps = append(ps, *p)
	}
	return d.status(sec, ps)
}
