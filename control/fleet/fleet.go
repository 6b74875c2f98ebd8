// Package fleet owns where containers run: the control plane's own
// engine (--runtime) and every server that has an endpoint (a Docker
// engine or a Kubernetes cluster, sealed in its record by the servers
// domain). A Fleet is one runtime.Driver to the container lifecycle: each
// call goes to the driver of the server the container's record names (the
// local engine when it names none), and lists and watches join every
// server's. It also places new containers by free capacity and copies a
// stopped container's workspace between two Docker servers.
//
// The store is the truth: a Fleet reads the servers' records and keeps a
// driver per endpoint only as a cache, rebuilt when a record's sealed
// endpoint changes, so replicas of the control plane agree.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"deckhand/control/runtime"
	"deckhand/control/runtime/docker"
	"deckhand/control/runtime/kubernetes"
	"deckhand/control/servers"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// Options configure a Fleet.
type Options struct {
	DB     *store.DB
	Sealer *secrets.Sealer
	// Local is the engine of --runtime; nil: none (then only servers
	// with endpoints run containers).
	Local runtime.Driver
	// Installation labels every engine object, on every server.
	Installation string
	// GatewayPort is the agent gateway's port in a container.
	GatewayPort int
	// KubePullPolicy and KubeStorageClass apply to Kubernetes servers as
	// to the local cluster.
	KubePullPolicy   corev1.PullPolicy
	KubeStorageClass string
	// Refresh is how often a watch looks for servers added, changed or
	// removed (default 5 s).
	Refresh time.Duration
	Log     *slog.Logger
}

// Fleet routes the runtime seam to the servers' engines.
type Fleet struct {
	o      Options
	mu     sync.Mutex
	locate func(ctx context.Context, id string) (server string, found bool, err error)
	// members are the drivers of the servers with endpoints, by id.
	members map[string]*member
	// names are the servers' names by id, as last read.
	names map[string]string
}

type member struct {
	sealed string
	driver string
	drv    runtime.Driver
}

var (
	_ runtime.Driver     = (*Fleet)(nil)
	_ runtime.FileWriter = (*Fleet)(nil)
)

// New makes a Fleet; it reaches no engine until a call needs one.
func New(o Options) *Fleet {
	if o.Refresh <= 0 {
		o.Refresh = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Fleet{o: o, members: map[string]*member{}, names: map[string]string{}}
}

// Bind sets how the fleet finds a container's server (the projects
// domain's records): the server a record names ("" for the local engine),
// found false when no record has the id.
func (f *Fleet) Bind(locate func(ctx context.Context, id string) (server string, found bool, err error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locate = locate
}

// ErrNoServer: a record names a server that has no endpoint (any more).
var ErrNoServer = errors.New("fleet: the container's server has no endpoint")

// refresh reads the servers with endpoints and brings the drivers in
// line: a new or changed endpoint gets a new driver, a removed one's is
// closed. It answers the runners read.
func (f *Fleet) refresh(ctx context.Context) ([]servers.Runner, error) {
	var rs []servers.Runner
	err := f.o.DB.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		rs, err = servers.Runners(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.ID] = true
		f.names[r.ID] = r.Name
		if m := f.members[r.ID]; m != nil && m.sealed == r.Sealed {
			continue
		}
		drv, err := f.open(r)
		if err != nil {
			f.o.Log.Warn("server endpoint: cannot make its driver", "server", r.ID, "err", err)
			continue
		}
		if old := f.members[r.ID]; old != nil {
			_ = old.drv.Close()
		}
		f.members[r.ID] = &member{sealed: r.Sealed, driver: r.Driver, drv: drv}
	}
	for id, m := range f.members {
		if !seen[id] {
			_ = m.drv.Close()
			delete(f.members, id)
			delete(f.names, id)
		}
	}
	return rs, nil
}

// open makes the driver of a runner's endpoint.
func (f *Fleet) open(r servers.Runner) (runtime.Driver, error) {
	ep, err := servers.OpenEndpoint(f.o.Sealer, r.Sealed)
	if err != nil {
		return nil, err
	}
	switch ep.Driver {
	case servers.DriverDocker:
		tc, err := ep.TLSConfig()
		if err != nil {
			return nil, err
		}
		return docker.New(context.Background(), docker.Options{Host: ep.DockerHost, TLS: tc, Installation: f.o.Installation, GatewayPort: f.o.GatewayPort})
	case servers.DriverKubernetes:
		rc, err := ep.RESTConfig()
		if err != nil {
			return nil, err
		}
		return kubernetes.New(kubernetes.Options{Config: rc, Namespace: ep.Namespace, Installation: f.o.Installation,
			GatewayPort: f.o.GatewayPort, PullPolicy: f.o.KubePullPolicy, StorageClass: f.o.KubeStorageClass})
	}
	return nil, fmt.Errorf("fleet: server %s: unknown driver %q", r.ID, ep.Driver)
}

// server is the driver of server id ("": the local engine).
func (f *Fleet) server(ctx context.Context, id string) (runtime.Driver, error) {
	if id == "" {
		if f.o.Local == nil {
			return nil, fmt.Errorf("fleet: no local engine (--runtime none): %w", runtime.ErrUnavailable)
		}
		return f.o.Local, nil
	}
	if m := f.member(id); m != nil {
		return m.drv, nil
	}
	if _, err := f.refresh(ctx); err != nil {
		return nil, fmt.Errorf("fleet: read the servers: %w: %v", runtime.ErrUnavailable, err)
	}
	if m := f.member(id); m != nil {
		return m.drv, nil
	}
	return nil, fmt.Errorf("server %s: %w", id, ErrNoServer)
}

func (f *Fleet) member(id string) *member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members[id]
}

// all is every driver: the local engine's first, then the servers' by id.
func (f *Fleet) all(ctx context.Context) ([]runtime.Driver, error) {
	if _, err := f.refresh(ctx); err != nil {
		return nil, fmt.Errorf("fleet: read the servers: %w: %v", runtime.ErrUnavailable, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runtime.Driver
	if f.o.Local != nil {
		out = append(out, f.o.Local)
	}
	ids := make([]string, 0, len(f.members))
	for id := range f.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		out = append(out, f.members[id].drv)
	}
	return out, nil
}

// of is the driver container id's record names; found is false when no
// record has the id.
func (f *Fleet) of(ctx context.Context, id string) (drv runtime.Driver, found bool, err error) {
	f.mu.Lock()
	locate := f.locate
	f.mu.Unlock()
	server := ""
	if locate != nil {
		if server, found, err = locate(ctx, id); err != nil {
			return nil, false, fmt.Errorf("fleet: find container %s's server: %w: %v", id, runtime.ErrUnavailable, err)
		}
	}
	drv, err = f.server(ctx, server)
	return drv, found, err
}

// Name is server id's name (its server_name in URLs); false when it has
// no endpoint.
func (f *Fleet) Name(ctx context.Context, id string) (string, bool) {
	f.mu.Lock()
	n, ok := f.names[id]
	f.mu.Unlock()
	if ok {
		return n, true
	}
	if _, err := f.refresh(ctx); err != nil {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok = f.names[id]
	return n, ok
}

// Capabilities implements runtime.Driver: the local engine's (a Docker
// driver's when there is none). A container on a server has its server's
// engine's: CapabilitiesOf.
func (f *Fleet) Capabilities() runtime.Capabilities {
	if f.o.Local != nil {
		return f.o.Local.Capabilities()
	}
	return runtime.Capabilities{Name: "docker", Pause: true, Snapshots: true}
}

// CapabilitiesOf is what the engine of server id ("": the local engine)
// can do, so a call the engine that runs a container cannot make is
// refused by its rule, whatever the local engine can.
func (f *Fleet) CapabilitiesOf(ctx context.Context, id string) (runtime.Capabilities, error) {
	if id == "" {
		return f.Capabilities(), nil
	}
	d, err := f.server(ctx, id)
	if err != nil {
		return runtime.Capabilities{}, err
	}
	return d.Capabilities(), nil
}

// on calls call with the driver of container id's server.
func (f *Fleet) on(ctx context.Context, id string, call func(runtime.Driver) error) error {
	d, _, err := f.of(ctx, id)
	if err != nil {
		return err
	}
	return call(d)
}

// Create implements runtime.Driver on the container's server.
func (f *Fleet) Create(ctx context.Context, spec runtime.Spec) error {
	return f.on(ctx, spec.ID, func(d runtime.Driver) error { return d.Create(ctx, spec) })
}

// Start implements runtime.Driver.
func (f *Fleet) Start(ctx context.Context, id string) error {
	return f.on(ctx, id, func(d runtime.Driver) error { return d.Start(ctx, id) })
}

// Stop implements runtime.Driver.
func (f *Fleet) Stop(ctx context.Context, id string, timeout time.Duration) error {
	return f.on(ctx, id, func(d runtime.Driver) error { return d.Stop(ctx, id, timeout) })
}

// Restart implements runtime.Driver.
func (f *Fleet) Restart(ctx context.Context, id string, timeout time.Duration) error {
	return f.on(ctx, id, func(d runtime.Driver) error { return d.Restart(ctx, id, timeout) })
}

// Pause implements runtime.Driver.
func (f *Fleet) Pause(ctx context.Context, id string) error {
	return f.on(ctx, id, func(d runtime.Driver) error { return d.Pause(ctx, id) })
}

// Resume implements runtime.Driver.
func (f *Fleet) Resume(ctx context.Context, id string) error {
	return f.on(ctx, id, func(d runtime.Driver) error { return d.Resume(ctx, id) })
}

// Delete implements runtime.Driver. An id no record names (a kept
// workspace, an engine container without a record) is deleted on every
// server, as a delete of what is missing succeeds.
func (f *Fleet) Delete(ctx context.Context, id string, keepWorkspace bool) error {
	d, found, err := f.of(ctx, id)
	if err != nil {
		return err
	}
	if found {
		return d.Delete(ctx, id, keepWorkspace)
	}
	ds, err := f.all(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range ds {
		errs = append(errs, d.Delete(ctx, id, keepWorkspace))
	}
	return errors.Join(errs...)
}

// Inspect implements runtime.Driver: on the record's server, or for an id
// no record names, the first server that holds it.
func (f *Fleet) Inspect(ctx context.Context, id string) (runtime.Status, error) {
	d, found, err := f.of(ctx, id)
	if err != nil {
		return runtime.Status{}, err
	}
	if found {
		return d.Inspect(ctx, id)
	}
	ds, err := f.all(ctx)
	if err != nil {
		return runtime.Status{}, err
	}
	for _, d := range ds {
		st, err := d.Inspect(ctx, id)
		if err != nil {
			return st, err
		}
		if st.State != runtime.StateMissing {
			return st, nil
		}
	}
	return runtime.Status{State: runtime.StateMissing}, nil
}

// List implements runtime.Driver: every server's containers. One server
// that does not answer fails the list, so the reconciler never takes its
// containers for missing.
func (f *Fleet) List(ctx context.Context) (map[string]runtime.Status, error) {
	ds, err := f.all(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]runtime.Status{}
	for _, d := range ds {
		l, err := d.List(ctx)
		if err != nil {
			return nil, err
		}
		for id, st := range l {
			out[id] = st
		}
	}
	return out, nil
}

// Watch implements runtime.Driver: every server's events on one channel.
// It closes when any server's stream ends or the set of servers changes,
// so the reconciler lists again and watches the servers as they are.
func (f *Fleet) Watch(ctx context.Context) (<-chan runtime.Event, error) {
	ds, err := f.all(ctx)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	out := make(chan runtime.Event)
	var wg sync.WaitGroup
	for _, d := range ds {
		ch, err := d.Watch(wctx)
		if err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			for {
				select {
				case <-wctx.Done():
					return
				case ev, ok := <-ch:
					if !ok {
						return
					}
					select {
					case out <- ev:
					case <-wctx.Done():
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		before := f.fingerprint()
		t := time.NewTicker(f.o.Refresh)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				if _, err := f.refresh(wctx); err == nil && f.fingerprint() != before {
					return
				}
			}
		}
	}()
	go func() {
		wg.Wait()
		close(out)
	}()
	return out, nil
}

// fingerprint names the servers' endpoints as last read.
func (f *Fleet) fingerprint() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, 0, len(f.members))
	for id, m := range f.members {
		ids = append(ids, id+"="+m.sealed)
	}
	sort.Strings(ids)
	return fmt.Sprint(ids)
}

// ImageExists implements runtime.Driver: whether any server holds the
// image. A create on a server without it answers runtime.ErrImageMissing.
func (f *Fleet) ImageExists(ctx context.Context, image string) (bool, error) {
	ds, err := f.all(ctx)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, d := range ds {
		ok, err := d.ImageExists(ctx, image)
		if ok {
			return true, nil
		}
		errs = append(errs, err)
	}
	return false, errors.Join(errs...)
}

// WriteFiles implements runtime.FileWriter on the container's server.
func (f *Fleet) WriteFiles(ctx context.Context, id string, files []runtime.File) error {
	return f.on(ctx, id, func(d runtime.Driver) error {
		w, ok := d.(runtime.FileWriter)
		if !ok {
			return fmt.Errorf("fleet: writing files into container %s: %w", id, runtime.ErrNotSupported)
		}
		return w.WriteFiles(ctx, id, files)
	})
}

// Snapshot implements runtime.Driver on the container's server.
func (f *Fleet) Snapshot(ctx context.Context, id, snap string) (runtime.Snapshot, error) {
	d, _, err := f.of(ctx, id)
	if err != nil {
		return runtime.Snapshot{}, err
	}
	return d.Snapshot(ctx, id, snap)
}

// DeleteSnapshot implements runtime.Driver on every server (a missing
// snapshot image succeeds).
func (f *Fleet) DeleteSnapshot(ctx context.Context, snap string) error {
	ds, err := f.all(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range ds {
		if err := d.DeleteSnapshot(ctx, snap); err != nil && !errors.Is(err, runtime.ErrNotSupported) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// HostAddr is where the local engine's containers reach the host.
func (f *Fleet) HostAddr(ctx context.Context) (string, error) {
	if h, ok := f.o.Local.(interface {
		HostAddr(context.Context) (string, error)
	}); ok {
		return h.HostAddr(ctx)
	}
	return "", errors.New("set --agent-control-url: no local engine gives the agents an address of the host")
}

// Close implements runtime.Driver: every driver it made, and the local
// engine's.
func (f *Fleet) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for id, m := range f.members {
		errs = append(errs, m.drv.Close())
		delete(f.members, id)
	}
	if f.o.Local != nil {
		errs = append(errs, f.o.Local.Close())
	}
	return errors.Join(errs...)
}
