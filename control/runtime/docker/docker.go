// Package docker is the runtime driver for the Docker Engine API, and for
// Podman's Docker-compatible socket, which answers the same client. It
// owns the engine objects of one installation: its containers, their
// workspace volumes and the installation's bridge network, all labelled,
// so that a driver never touches what another installation made.
//
// The driver keeps no state between calls that it needs: every object's
// name follows from the installation and the container id, and every call
// finds what an earlier (perhaps crashed) call made. It remembers only the
// engine's ids of containers it has checked, to skip a lookup (known.go).
package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"deckhand/control/runtime"
)

// DefaultHost is Options.Host's default.
const DefaultHost = "unix:///var/run/docker.sock"

// Options configure a Driver.
type Options struct {
	// Host is the engine's address (unix:///path or tcp://host:port);
	// empty: $DOCKER_HOST, else DefaultHost.
	Host string
	// Installation is this control plane's id; it names and labels every
	// object the driver makes. Required.
	Installation string
	// Network is the bridge network the containers join and the control
	// plane reaches their agents on; empty: "deckhand-<installation>".
	Network string
	// GatewayPort is the agent gateway's port inside the container.
	GatewayPort int
	// Home is where the workspace volume is mounted: the image user's home.
	Home string
	// TLS, when set, is the client's TLS configuration for a tcp:// Host
	// (the engine's CA and this client's certificate).
	TLS *tls.Config
	// FilesDir, when set, is an absolute directory of the host the
	// engine runs on, where the driver keeps each container's files
	// (root-only) for the engine to bind-mount (files.go); empty: the
	// files are copied into each container through the engine.
	FilesDir string
}

// namePattern is what the engine accepts in an object name; ids and the
// installation become part of names, so they are held to it.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// Driver is the Docker Engine driver. It is safe for concurrent use.
type Driver struct {
	cli  *client.Client
	opts Options

	// netMu keeps two creates of this driver from making the network
	// twice.
	netMu sync.Mutex

	// podman caches which engine answers (1 Docker, 2 Podman), once known.
	podman atomic.Int32

	// known maps a container id to its engine container's id, checked to
	// be this installation's (known.go).
	known sync.Map

	// noBind is set once the engine refused a bind of FilesDir: it does
	// not see this host's filesystem (files.go).
	noBind atomic.Bool
	// bindable caches canBind (1 yes, 2 no), once known.
	bindable atomic.Int32
}

var _ runtime.Driver = (*Driver)(nil)

// New answers a driver for the engine at opts.Host. It does not reach the
// engine: a control plane starts while its engine is down, and each call
// answers runtime.ErrUnavailable until the engine answers.
func New(ctx context.Context, opts Options) (*Driver, error) {
	_ = ctx
	if !namePattern.MatchString(opts.Installation) {
		return nil, fmt.Errorf("docker runtime: installation %q: must be 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit", opts.Installation)
	}
	if opts.Host == "" {
		opts.Host = os.Getenv("DOCKER_HOST")
	}
	if opts.Host == "" {
		opts.Host = DefaultHost
	}
	if opts.Network == "" {
		opts.Network = "deckhand-" + opts.Installation
	}
	if !namePattern.MatchString(opts.Network) {
		return nil, fmt.Errorf("docker runtime: network %q: must be letters, digits, '_', '.' or '-', starting with a letter or digit", opts.Network)
	}
	if err := runtime.AgentOptions("docker", &opts.GatewayPort, &opts.Home); err != nil {
		return nil, err
	}
	if opts.FilesDir != "" && !path.IsAbs(opts.FilesDir) {
		return nil, fmt.Errorf("docker runtime: files directory %q: must be absolute", opts.FilesDir)
	}
	// The client negotiates the API version on its first request, so one
	// client speaks to Debian's dockerd (1.41) and Podman's socket alike.
	copts := []client.Opt{client.WithHost(opts.Host)}
	if opts.TLS != nil {
		// The transport carries the TLS configuration; the host's
		// settings go on top of it.
		copts = append([]client.Opt{client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: opts.TLS}})}, copts...)
	}
	cli, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker runtime: host %q: %w", opts.Host, err)
	}
	return &Driver{cli: cli, opts: opts}, nil
}

// Capabilities implements runtime.Driver.
func (d *Driver) Capabilities() runtime.Capabilities {
	return runtime.Capabilities{Name: "docker", Pause: true, Snapshots: true}
}

// Close implements runtime.Driver.
func (d *Driver) Close() error { return d.cli.Close() }

// ContainerName is the engine's name of container id.
func (d *Driver) ContainerName(id string) string {
	return "deckhand-" + d.opts.Installation + "-" + id
}

// volumeName is the engine's name of a workspace volume: its
// workspace's (the id of the container that made it), else the
// container's own.
func (d *Driver) volumeName(spec runtime.Spec) string {
	return d.ContainerName(workspaceOf(spec)) + "-home"
}

// workspaceOf is the id a workspace volume of spec is labelled with, so
// that a delete of the container removes its own workspace and never one
// kept from another container.
func workspaceOf(spec runtime.Spec) string {
	if spec.Workspace != "" {
		return spec.Workspace
	}
	return spec.ID
}

func (d *Driver) labels(id, project string) map[string]string {
	return runtime.Labels(d.opts.Installation, id, project)
}

var _ runtime.FileWriter = (*Driver)(nil)

// WriteFiles implements runtime.FileWriter: the engine copies into a
// paused container too (its filesystem, not its processes).
func (d *Driver) WriteFiles(ctx context.Context, id string, files []runtime.File) error {
	if d.writeKnown(ctx, id, files) {
		return nil
	}
	c, err := d.existing(ctx, id)
	if err != nil {
		return err
	}
	return d.writeFiles(ctx, id, c.ID, files)
}

// fail maps an engine error to the seam's errors, keeping the engine's
// words for the operator.
func fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("docker %s: %w: %v", op, runtime.ErrUnavailable, err)
	}
	return fmt.Errorf("docker %s: %w", op, err)
}

func checkID(id string) error {
	if !namePattern.MatchString(id) {
		return fmt.Errorf("docker runtime: container id %q: must be 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit", id)
	}
	return nil
}

// find inspects the container of id; ok is false when the engine holds
// none. A container of that name made by another installation is an
// error, never ours to act on.
func (d *Driver) find(ctx context.Context, id string) (container.InspectResponse, bool, error) {
	if err := checkID(id); err != nil {
		return container.InspectResponse{}, false, err
	}
	res, err := d.cli.ContainerInspect(ctx, d.ContainerName(id), client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		d.forget(id)
		return container.InspectResponse{}, false, nil
	}
	if err != nil {
		return container.InspectResponse{}, false, fail("inspect", err)
	}
	c := res.Container
	if c.Config == nil || c.Config.Labels[runtime.LabelInstallation] != d.opts.Installation || c.Config.Labels[runtime.LabelContainer] != id {
		d.forget(id)
		return container.InspectResponse{}, false, fmt.Errorf("docker runtime: the engine's container %q was not made by installation %q", d.ContainerName(id), d.opts.Installation)
	}
	d.remember(id, c.ID)
	return c, true, nil
}

// ImageExists implements runtime.Driver.
func (d *Driver) ImageExists(ctx context.Context, image string) (bool, error) {
	if image == "" {
		return false, errors.New("docker runtime: image: required")
	}
	_, err := d.cli.ImageInspect(ctx, image)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fail("image inspect", err)
	}
	return true, nil
}

// Create implements runtime.Driver: the image's entrypoint (the agent)
// runs as root with spec.Args, the workspace volume is the user's home,
// and spec.Files are written before the container first starts. A create
// of an existing container writes spec.Files again and succeeds.
//
// The common path is three engine calls (network, container, files): the
// network is looked at on every create, because Docker accepts a create on
// a network removed behind the driver's back and fails only at the start;
// Docker makes the workspace volume (labelled) with the container, and the
// engine's own answers say when the container exists already or the image
// is missing.
func (d *Driver) Create(ctx context.Context, spec runtime.Spec) error {
	if err := checkSpec(spec); err != nil {
		return err
	}
	if err := d.ensureNetwork(ctx); err != nil {
		return err
	}
	runtime.Mark(ctx, "engine_network")
	podman, err := d.isPodman(ctx)
	if err != nil {
		return err
	}
	vol := d.volumeName(spec)
	if podman {
		// Podman's API may not label a volume it makes for a mount.
		if err := d.ensureVolume(ctx, vol, spec); err != nil {
			return err
		}
		runtime.Mark(ctx, "engine_volume")
	}
	labels := d.labels(spec.ID, spec.ProjectID)
	if spec.Pool != "" {
		labels[runtime.LabelPool] = spec.Pool
	}
	policy := container.RestartPolicy{Name: container.RestartPolicyDisabled}
	if spec.Autostart {
		policy.Name = container.RestartPolicyUnlessStopped
	}
	cfg := &container.Config{
		Image: spec.Image,
		Cmd:   spec.Args,
		Env:   envList(spec.Env),
		// The agent keeps root (it drops to the image's user for what it
		// runs); numeric, so an image without /etc/passwd works too.
		User:   "0:0",
		Labels: labels,
	}
	host := &container.HostConfig{
		RestartPolicy: policy,
		// The agent's egress rules need NET_ADMIN; raw sockets are a tool
		// against neighbours, not a need.
		CapAdd:  []string{"NET_ADMIN"},
		CapDrop: []string{"NET_RAW"},
		Mounts: []mount.Mount{{
			Type:   mount.TypeVolume,
			Source: vol,
			Target: d.opts.Home,
			// Docker makes a missing volume with these labels, and
			// leaves an existing one as it is.
			VolumeOptions: &mount.VolumeOptions{Labels: d.labels(workspaceOf(spec), spec.ProjectID)},
		}},
		NetworkMode: container.NetworkMode(d.opts.Network),
		Resources: container.Resources{
			NanoCPUs: int64(math.Round(spec.Resources.CPUs * 1e9)),
			Memory:   spec.Resources.MemoryMB << 20,
		},
	}
	if !podman {
		// Docker's own init (tini, docker-init) is PID 1 and reaps the
		// container's orphans, so the agent need not start a second copy
		// of itself for that: about 15 MiB less per container. Podman's
		// (catatonit) is optional on Debian, so there the agent stays its
		// own init.
		host.Init = &dockerInit
	}
	netcfg := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		d.opts.Network: {},
	}}
	var bound []mount.Mount
	if dir := d.filesDir(ctx, spec.ID, podman); dir != "" && len(spec.Files) > 0 {
		if bound, err = writeHostFiles(dir, spec.Files); err != nil {
			_ = d.removeHostFiles(spec.ID)
			return err
		}
		host.Mounts = append(host.Mounts, bound...)
	}
	opts := client.ContainerCreateOptions{
		Name: d.ContainerName(spec.ID), Config: cfg, HostConfig: host, NetworkingConfig: netcfg,
	}
	if beforeCreate != nil {
		beforeCreate()
	}
	res, err := d.cli.ContainerCreate(ctx, opts)
	if bound != nil && bindRefused(err) {
		// The engine does not see this host's files: copy from now on.
		d.noBind.Store(true)
		_ = d.removeHostFiles(spec.ID)
		host.Mounts, bound = host.Mounts[:len(host.Mounts)-len(bound)], nil
		res, err = d.cli.ContainerCreate(ctx, opts)
	}
	if err != nil {
		// Made already (a repeated create, or a concurrent one that won
		// the name): write the files again, so a token minted for the
		// retry reaches the agent.
		c, ok, ferr := d.find(ctx, spec.ID)
		if ferr != nil {
			return ferr
		}
		if ok {
			if bound != nil && bindsFrom(c, d.filesDir(ctx, spec.ID, podman)) {
				return nil // written above, over the files it binds
			}
			if rerr := d.removeHostFiles(spec.ID); rerr != nil {
				return rerr
			}
			return d.copyFiles(ctx, c.ID, spec.Files)
		}
		_ = d.removeHostFiles(spec.ID)
		// Leave nothing behind: the workspace made for this container goes
		// with the failed create (a named workspace is not its alone).
		if spec.Workspace == "" {
			_, _ = d.cli.VolumeRemove(context.WithoutCancel(ctx), vol, client.VolumeRemoveOptions{})
		}
		if cerrdefs.IsNotFound(err) {
			if exists, ierr := d.ImageExists(ctx, spec.Image); ierr == nil && !exists {
				return fmt.Errorf("docker create: image %q: %w", spec.Image, runtime.ErrImageMissing)
			}
		}
		return fail("create", err)
	}
	runtime.Mark(ctx, "engine_container")
	if bound != nil {
		d.remember(spec.ID, res.ID)
		return nil
	}
	if err := d.copyFiles(ctx, res.ID, spec.Files); err != nil {
		// A container without its token would start an agent that cannot
		// enrol; leave nothing half made.
		_, _ = d.cli.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		return err
	}
	d.remember(spec.ID, res.ID)
	return nil
}

func checkSpec(spec runtime.Spec) error {
	if err := checkID(spec.ID); err != nil {
		return err
	}
	if spec.Image == "" {
		return errors.New("docker runtime: image: required")
	}
	if spec.Workspace != "" && !namePattern.MatchString(spec.Workspace) {
		return fmt.Errorf("docker runtime: workspace %q: must be letters, digits, '_', '.' or '-', starting with a letter or digit", spec.Workspace)
	}
	if spec.Resources.CPUs < 0 || spec.Resources.MemoryMB < 0 {
		return errors.New("docker runtime: resources: must not be negative")
	}
	for k := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("docker runtime: env %q: a name must be non-empty without '=' or NUL", k)
		}
	}
	for _, f := range spec.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return fmt.Errorf("docker runtime: file %q: must be a clean absolute path below /", f.Path)
		}
	}
	return nil
}

func envList(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// ensureNetwork makes the installation's bridge network when the engine
// lacks it; it looks each time (one cheap call), so a network removed
// behind the driver's back (a prune, an engine reset) is made again.
// Between the containers on it, traffic is dropped on the Docker Engine
// (icc off): a sandbox reaches the host and the world, never its
// neighbours.
func (d *Driver) ensureNetwork(ctx context.Context) error {
	d.netMu.Lock()
	defer d.netMu.Unlock()
	n, err := d.cli.NetworkInspect(ctx, d.opts.Network, client.NetworkInspectOptions{})
	if err == nil {
		if n.Network.Labels[runtime.LabelInstallation] != d.opts.Installation {
			return fmt.Errorf("docker runtime: network %q exists and was not made by installation %q", d.opts.Network, d.opts.Installation)
		}
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return fail("network inspect", err)
	}
	opts := client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: map[string]string{runtime.LabelInstallation: d.opts.Installation},
	}
	podman, err := d.isPodman(ctx)
	if err != nil {
		return err
	}
	if !podman {
		// Podman's bridge takes no such option; its networks isolate per
		// network only.
		opts.Options = map[string]string{"com.docker.network.bridge.enable_icc": "false"}
	}
	_, err = d.cli.NetworkCreate(ctx, d.opts.Network, opts)
	if err != nil && !cerrdefs.IsConflict(err) {
		return fail("network create", err)
	}
	return nil
}

// dockerInit is HostConfig.Init on Docker.
var dockerInit = true

func (d *Driver) isPodman(ctx context.Context) (bool, error) {
	switch d.podman.Load() {
	case 1:
		return false, nil
	case 2:
		return true, nil
	}
	v, err := d.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return false, fail("version", err)
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			d.podman.Store(2)
			return true, nil
		}
	}
	d.podman.Store(1)
	return false, nil
}

// ensureVolume makes the workspace volume; the engine answers an existing
// one as made (Docker) or as a conflict (Podman).
func (d *Driver) ensureVolume(ctx context.Context, name string, spec runtime.Spec) error {
	_, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: d.labels(workspaceOf(spec), spec.ProjectID)})
	if err != nil && !cerrdefs.IsConflict(err) {
		return fail("volume create", err)
	}
	return nil
}

// copyFiles writes files into the container's filesystem in one archive,
// owned by root. The engine makes missing parent directories (root's,
// mode 0755) and leaves existing ones as they are, since the archive
// holds no directory entries.
func (d *Driver) copyFiles(ctx context.Context, cid string, files []runtime.File) error {
	if len(files) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, f := range files {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Path, "/"), Mode: int64(fileMode(f)), Size: int64(len(f.Content)), ModTime: now, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := d.cli.CopyToContainer(ctx, cid, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		return fail("copy files", err)
	}
	return nil
}

// existing is container id, or runtime.ErrNotFound when the engine holds
// none of this installation's.
func (d *Driver) existing(ctx context.Context, id string) (container.InspectResponse, error) {
	c, ok, err := d.find(ctx, id)
	if err == nil && !ok {
		err = errMissing(id)
	}
	return c, err
}

func errMissing(id string) error {
	return fmt.Errorf("docker runtime: container %q: %w", id, runtime.ErrNotFound)
}

// Start implements runtime.Driver; starting a running container succeeds.
func (d *Driver) Start(ctx context.Context, id string) error {
	// A paused container is refused by the engine and goes the checked
	// way, which resumes it.
	if callKnown(ctx, d, id, d.cli.ContainerStart, client.ContainerStartOptions{}) {
		return nil
	}
	c, err := d.existing(ctx, id)
	if err != nil {
		return err
	}
	if c.State != nil && c.State.Paused {
		return d.Resume(ctx, id)
	}
	if _, err := d.cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		return fail("start", err)
	}
	return nil
}

func seconds(timeout time.Duration) *int {
	s := int(math.Ceil(timeout.Seconds()))
	if s < 0 {
		s = 0
	}
	return &s
}

// Stop implements runtime.Driver; stopping a stopped container succeeds.
func (d *Driver) Stop(ctx context.Context, id string, timeout time.Duration) error {
	c, err := d.existing(ctx, id)
	if err != nil {
		return err
	}
	if _, err := d.cli.ContainerStop(ctx, c.ID, client.ContainerStopOptions{Timeout: seconds(timeout)}); err != nil {
		return fail("stop", err)
	}
	return nil
}

// Restart implements runtime.Driver: a stopped container starts.
func (d *Driver) Restart(ctx context.Context, id string, timeout time.Duration) error {
	c, err := d.existing(ctx, id)
	if err != nil {
		return err
	}
	if _, err := d.cli.ContainerRestart(ctx, c.ID, client.ContainerRestartOptions{Timeout: seconds(timeout)}); err != nil {
		return fail("restart", err)
	}
	return nil
}

// Pause implements runtime.Driver (the cgroup freezer); pausing a paused
// container succeeds.
func (d *Driver) Pause(ctx context.Context, id string) error {
	if callKnown(ctx, d, id, d.cli.ContainerPause, client.ContainerPauseOptions{}) {
		return nil
	}
	c, err := d.existing(ctx, id)
	if err != nil {
		return err
	}
	if c.State != nil && c.State.Paused {
		return nil
	}
	if _, err := d.cli.ContainerPause(ctx, c.ID, client.ContainerPauseOptions{}); err != nil {
		if c2, ok, ferr := d.find(ctx, id); ferr == nil && ok && c2.State != nil && c2.State.Paused {
			return nil
		}
		return fail("pause", err)
	}
	return nil
}

// Resume implements runtime.Driver; resuming a running container succeeds.
func (d *Driver) Resume(ctx context.Context, id string) error {
	// A container that is not paused is refused by the engine and goes
	// the checked way, which answers a running one as resumed.
	if callKnown(ctx, d, id, d.cli.ContainerUnpause, client.ContainerUnpauseOptions{}) {
		return nil
	}
	c, err := d.existing(ctx, id)
	if err != nil {
		return err
	}
	if c.State == nil || !c.State.Paused {
		if c.State != nil && c.State.Running {
			return nil
		}
		return fmt.Errorf("docker runtime: resume %q: the container is %s, not paused", id, c.State.Status)
	}
	if _, err := d.cli.ContainerUnpause(ctx, c.ID, client.ContainerUnpauseOptions{}); err != nil {
		if c2, ok, ferr := d.find(ctx, id); ferr == nil && ok && c2.State != nil && c2.State.Running && !c2.State.Paused {
			return nil
		}
		return fail("resume", err)
	}
	return nil
}

// owns says whether labels are of this installation (and of container id,
// when not empty). Engines filter lists by label, but Podman joins two
// label filters of a volume list with "or", so every object is checked
// again before a driver acts on it.
func (d *Driver) owns(labels map[string]string, id string) bool {
	return labels[runtime.LabelInstallation] == d.opts.Installation && (id == "" || labels[runtime.LabelContainer] == id)
}

func (d *Driver) filter(id string) client.Filters {
	f := client.Filters{}.Add("label", runtime.LabelInstallation+"="+d.opts.Installation)
	if id != "" {
		f = f.Add("label", runtime.LabelContainer+"="+id)
	}
	return f
}

// Delete implements runtime.Driver: every container of id this
// installation made goes, then (unless keepWorkspace) its volumes. A
// missing container is no error.
func (d *Driver) Delete(ctx context.Context, id string, keepWorkspace bool) error {
	if err := checkID(id); err != nil {
		return err
	}
	d.forget(id)
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: d.filter(id)})
	if err != nil {
		return fail("list", err)
	}
	for _, c := range list.Items {
		if !d.owns(c.Labels, id) {
			continue
		}
		if err := d.remove(ctx, c.ID); err != nil {
			return err
		}
	}
	if err := d.removeHostFiles(id); err != nil {
		return err
	}
	if keepWorkspace {
		return nil
	}
	vols, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: d.filter(id)})
	if err != nil {
		return fail("volume list", err)
	}
	for _, v := range vols.Items {
		if !d.owns(v.Labels, id) {
			continue
		}
		_, err := d.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return fail("volume remove", err)
		}
	}
	return nil
}

// remove force-removes a container. Podman refuses one its restart policy
// is between two runs of ("state improper"), so a refusal is tried again
// a few times before it is the answer.
func (d *Driver) remove(ctx context.Context, cid string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		_, err = d.cli.ContainerRemove(ctx, cid, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if client.IsErrConnectionFailed(err) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return fail("remove", err)
}

// Inspect implements runtime.Driver.
func (d *Driver) Inspect(ctx context.Context, id string) (runtime.Status, error) {
	c, ok, err := d.find(ctx, id)
	if err != nil {
		return runtime.Status{}, err
	}
	if !ok {
		return runtime.Status{State: runtime.StateMissing}, nil
	}
	st := runtime.Status{State: runtime.StateDead}
	if s := c.State; s != nil {
		st.State, st.Reason = mapState(s.Status, s.ExitCode, s.OOMKilled, s.Error)
		if t, err := time.Parse(time.RFC3339Nano, s.StartedAt); err == nil && t.Year() > 1 {
			st.StartedAt = t
		}
	}
	if st.State == runtime.StateRunning && c.NetworkSettings != nil {
		st.Addr = d.addr(c.NetworkSettings.Networks)
	}
	return st, nil
}

func (d *Driver) addr(nets map[string]*network.EndpointSettings) string {
	ep := nets[d.opts.Network]
	if ep == nil || !ep.IPAddress.IsValid() {
		return ""
	}
	return net.JoinHostPort(ep.IPAddress.String(), strconv.Itoa(d.opts.GatewayPort))
}

// mapState maps the engine's state word. Podman's socket answers its own
// words for some states: configured and initialized (made, never run),
// stopped (exited, also between two runs of a restart policy), stopping.
func mapState(s container.ContainerState, exit int, oom bool, engineErr string) (runtime.State, string) {
	var st runtime.State
	switch s {
	case container.StateCreated, "configured", "initialized":
		st = runtime.StateCreated
	case container.StateRunning:
		st = runtime.StateRunning
	case container.StatePaused:
		st = runtime.StatePaused
	case container.StateExited, container.StateRemoving, container.StateRestarting, "stopped", "stopping":
		// Restarting is between two runs of the restart policy: not
		// serving, so exited until it runs again.
		st = runtime.StateExited
	default:
		st = runtime.StateDead
	}
	var reason string
	if st == runtime.StateExited || st == runtime.StateDead {
		reason = "exit code " + strconv.Itoa(exit)
		if oom {
			reason += ", killed for lack of memory"
		}
		if s == container.StateRestarting {
			reason = "restarting after " + reason
		}
	}
	if engineErr != "" {
		reason = strings.TrimPrefix(reason+"; ", "; ") + engineErr
	}
	return st, reason
}

// List implements runtime.Driver.
func (d *Driver) List(ctx context.Context) (map[string]runtime.Status, error) {
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: d.filter("")})
	if err != nil {
		return nil, fail("list", err)
	}
	out := make(map[string]runtime.Status, len(list.Items))
	for _, c := range list.Items {
		id := c.Labels[runtime.LabelContainer]
		if id == "" || !d.owns(c.Labels, "") {
			continue
		}
		st := runtime.Status{}
		st.State, _ = mapState(c.State, 0, false, "")
		if st.State != runtime.StateRunning && st.State != runtime.StateCreated {
			st.Reason = c.Status
		}
		if st.State == runtime.StateRunning && c.NetworkSettings != nil {
			st.Addr = d.addr(c.NetworkSettings.Networks)
		}
		out[id] = st
	}
	return out, nil
}

// Watch implements runtime.Driver: the engine's container events of this
// installation, until ctx ends or the stream fails; then the channel
// closes and the caller lists and watches again.
func (d *Driver) Watch(ctx context.Context) (<-chan runtime.Event, error) {
	// The event request answers its failure to connect only on its
	// stream, after it returns: a ping first says the engine is there.
	if _, err := d.cli.Ping(ctx, client.PingOptions{}); err != nil {
		return nil, fail("events", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	f := d.filter("").Add("type", string(events.ContainerEventType))
	res := d.cli.Events(ctx, client.EventsListOptions{Filters: f})
	select {
	case err := <-res.Err:
		cancel()
		if err == nil {
			err = errors.New("event stream closed")
		}
		return nil, fail("events", err)
	default:
	}
	out := make(chan runtime.Event, 16)
	go func() {
		defer close(out)
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case <-res.Err:
				return
			case m := <-res.Messages:
				ev, ok := d.event(m)
				if !ok {
					continue
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func (d *Driver) event(m events.Message) (runtime.Event, bool) {
	a := m.Actor.Attributes
	if m.Type != events.ContainerEventType || a[runtime.LabelInstallation] != d.opts.Installation || a[runtime.LabelContainer] == "" {
		return runtime.Event{}, false
	}
	ev := runtime.Event{ContainerID: a[runtime.LabelContainer]}
	switch m.Action {
	case events.ActionCreate:
		ev.State = runtime.StateCreated
	case events.ActionStart, events.ActionRestart, events.ActionUnPause:
		ev.State = runtime.StateRunning
	case events.ActionPause:
		ev.State = runtime.StatePaused
	case events.ActionDie:
		ev.State = runtime.StateExited
		if code := a["exitCode"]; code != "" {
			ev.Reason = "exit code " + code
		}
	case events.ActionDestroy, events.ActionRemove:
		ev.State = runtime.StateMissing
	default:
		return runtime.Event{}, false
	}
	return ev, true
}
