// Package kubernetes is the runtime driver for a Kubernetes cluster, on
// client-go. Per container it keeps, in one namespace and labelled with
// the container, its project and this installation:
//
//   - a Secret, the container's anchor: the files the spec places (the
//     agent token among them) and the spec itself, so a start after a stop
//     makes the same Pod again with nothing kept in the driver;
//   - a PersistentVolumeClaim, the workspace mounted as the image user's
//     home, seeded from the image's home on first use;
//   - a headless Service naming the agent's gateway;
//   - while it runs, one Pod (the agent as PID 1).
//
// Stop deletes the Pod and keeps the claim (replicas 0, as SIG Apps'
// agent-sandbox does); start makes a new Pod; delete removes all of it.
// The cluster is the truth: every state is read from it, and Watch follows
// it with informers. Kubernetes has no freezer, so Pause and Resume answer
// runtime.ErrNotSupported (Capabilities say so).
package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"deckhand/control/runtime"
)

// Defaults of Options.
const (
	DefaultNamespace     = "deckhand"
	DefaultWorkspaceSize = "10Gi"
)

// Options configure a Driver.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file; empty: the in-cluster
	// configuration (the control plane running as a Pod).
	Kubeconfig string
	// Context is the kubeconfig context; empty: its current one.
	Context string
	// Config, when set, is used instead of Kubeconfig.
	Config *rest.Config
	// Namespace holds every object the driver makes.
	Namespace string
	// Installation is this control plane's id; it labels every object.
	// Required.
	Installation string
	// GatewayPort is the agent gateway's port inside the Pod.
	GatewayPort int
	// Home is where the workspace is mounted: the image user's home.
	Home string
	// StorageClass of the workspace claims; empty: the cluster's default.
	StorageClass string
	// WorkspaceSize is each claim's requested size.
	WorkspaceSize string
	// PullPolicy is the Pods' image pull policy (Always, IfNotPresent or
	// Never); with Never an image absent from every node is refused at
	// create.
	PullPolicy corev1.PullPolicy
}

var labelValue = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)

// Driver is the Kubernetes driver. It is safe for concurrent use.
type Driver struct {
	cli  kubernetes.Interface
	cfg  *rest.Config
	opts Options
	size resource.Quantity
}

var _ runtime.Driver = (*Driver)(nil)

// New answers a driver for the cluster the options name. It does not reach
// the cluster: each call answers runtime.ErrUnavailable until it answers.
func New(opts Options) (*Driver, error) {
	if !labelValue.MatchString(opts.Installation) {
		return nil, fmt.Errorf("kubernetes runtime: installation %q: must be 1-63 letters, digits, '_', '.' or '-', starting and ending with a letter or digit", opts.Installation)
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if err := runtime.AgentOptions("kubernetes", &opts.GatewayPort, &opts.Home); err != nil {
		return nil, err
	}
	if opts.WorkspaceSize == "" {
		opts.WorkspaceSize = DefaultWorkspaceSize
	}
	size, err := resource.ParseQuantity(opts.WorkspaceSize)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: workspace size %q: %v", opts.WorkspaceSize, err)
	}
	switch opts.PullPolicy {
	case "":
		opts.PullPolicy = corev1.PullIfNotPresent
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return nil, fmt.Errorf("kubernetes runtime: pull policy %q: must be Always, IfNotPresent or Never", opts.PullPolicy)
	}
	cfg := opts.Config
	if cfg == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = opts.Kubeconfig
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: opts.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes runtime: kubeconfig: %w", err)
		}
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	cli, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: %w", err)
	}
	return &Driver{cli: cli, cfg: cfg, opts: opts, size: size}, nil
}

// Capabilities implements runtime.Driver.
func (d *Driver) Capabilities() runtime.Capabilities {
	return runtime.Capabilities{Name: "kubernetes"}
}

// Close implements runtime.Driver.
func (d *Driver) Close() error { return nil }

// Namespace is where the driver's objects live.
func (d *Driver) Namespace() string { return d.opts.Namespace }

var nameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// Name is the base name of container id's objects: readable, a DNS label,
// and distinct per installation.
func (d *Driver) Name(id string) string {
	sum := sha256.Sum256([]byte(d.opts.Installation + "/" + id))
	readable := strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(id), "-"), "-")
	if len(readable) > 30 {
		readable = strings.TrimRight(readable[:30], "-")
	}
	if readable == "" {
		return "dh-" + hex.EncodeToString(sum[:6])
	}
	return "dh-" + readable + "-" + hex.EncodeToString(sum[:6])
}

// claimName is the workspace claim's name: the container's own, or that
// of the container whose workspace was kept for this one.
func (d *Driver) claimName(spec stored) string {
	return d.Name(spec.workspace()) + "-home"
}

func (d *Driver) labels(id, project string) map[string]string {
	return runtime.Labels(d.opts.Installation, id, project)
}

func (d *Driver) selector(id string) string {
	set := labels.Set{runtime.LabelInstallation: d.opts.Installation}
	if id != "" {
		set[runtime.LabelContainer] = id
	}
	return set.AsSelector().String()
}

// Annotations on the anchor Secret.
const (
	annStarted = "deckhand.started" // a Pod was made at least once
	annStopped = "deckhand.stopped" // the last Pod was stopped by Stop
	keySpec    = "spec"
)

// stored is the part of the spec the anchor keeps for later starts.
type stored struct {
	ID        string            `json:"id"`
	ProjectID string            `json:"project_id"`
	Image     string            `json:"image"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	CPUs      float64           `json:"cpus"`
	MemoryMB  int64             `json:"memory_mb"`
	Autostart bool              `json:"autostart"`
	Workspace string            `json:"workspace"`
	Files     []storedFile      `json:"files"`
}

// workspace is the id of the workspace the container mounts, which its
// claim is named and labelled by.
func (st stored) workspace() string {
	if st.Workspace != "" {
		return st.Workspace
	}
	return st.ID
}

type storedFile struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
}

// apiErr maps a client error: the cluster not answering is
// runtime.ErrUnavailable; the API's own answers pass as they are.
func apiErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("kubernetes runtime: %s: %w", op, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("kubernetes runtime: %s: %w", op, err)
	}
	return fmt.Errorf("%w: kubernetes: %s: %v", runtime.ErrUnavailable, op, err)
}

// Create implements runtime.Driver. A create of an existing container
// writes its files and spec again; a running Pod whose files changed is
// replaced, so a new token reaches the agent.
func (d *Driver) Create(ctx context.Context, spec runtime.Spec) error {
	if !labelValue.MatchString(spec.ID) {
		return fmt.Errorf("kubernetes runtime: container id %q: must be 1-63 letters, digits, '_', '.' or '-'", spec.ID)
	}
	if spec.ProjectID != "" && !labelValue.MatchString(spec.ProjectID) {
		return fmt.Errorf("kubernetes runtime: project id %q: must be 1-63 letters, digits, '_', '.' or '-'", spec.ProjectID)
	}
	ok, err := d.ImageExists(ctx, spec.Image)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s is on no node of the cluster and the pull policy is Never", runtime.ErrImageMissing, spec.Image)
	}
	st := stored{ID: spec.ID, ProjectID: spec.ProjectID, Image: spec.Image, Args: spec.Args, Env: spec.Env,
		CPUs: spec.Resources.CPUs, MemoryMB: spec.Resources.MemoryMB, Autostart: spec.Autostart, Workspace: spec.Workspace}
	data := map[string][]byte{}
	for i, f := range spec.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return fmt.Errorf("kubernetes runtime: file %q: must be a clean absolute path", f.Path)
		}
		key := "f" + strconv.Itoa(i)
		data[key] = f.Content
		st.Files = append(st.Files, storedFile{Key: key, Path: f.Path, Mode: f.Mode})
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	data[keySpec] = raw
	name := d.Name(spec.ID)
	secrets := d.cli.CoreV1().Secrets(d.opts.Namespace)
	changed := false
	existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: d.labels(spec.ID, spec.ProjectID)}, Data: data}
		if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return apiErr("create the container's secret", err)
		}
	case err != nil:
		return apiErr("read the container's secret", err)
	default:
		for k, v := range data {
			if k != keySpec && string(existing.Data[k]) != string(v) {
				changed = true
			}
		}
		existing.Data = data
		if _, err := secrets.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			return apiErr("update the container's secret", err)
		}
	}
	if err := d.ensureClaim(ctx, st); err != nil {
		return err
	}
	if err := d.ensureService(ctx, st); err != nil {
		return err
	}
	if changed {
		// Secret files reach a running Pod only when it is made again.
		pods, err := d.pods(ctx, spec.ID)
		if err != nil {
			return err
		}
		if live := livePod(pods); live != nil {
			if err := d.deletePods(ctx, pods, 0); err != nil {
				return err
			}
			return d.makePod(ctx, st)
		}
	}
	return nil
}

func (d *Driver) ensureClaim(ctx context.Context, st stored) error {
	claims := d.cli.CoreV1().PersistentVolumeClaims(d.opts.Namespace)
	name := d.claimName(st)
	if _, err := claims.Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return apiErr("read the workspace claim", err)
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: d.labels(st.workspace(), st.ProjectID)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: d.size}},
		},
	}
	if d.opts.StorageClass != "" {
		sc := d.opts.StorageClass
		pvc.Spec.StorageClassName = &sc
	}
	if _, err := claims.Create(ctx, pvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return apiErr("create the workspace claim", err)
	}
	return nil
}

func (d *Driver) ensureService(ctx context.Context, st stored) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name(st.ID), Labels: d.labels(st.ID, st.ProjectID)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  d.labels(st.ID, ""),
			Ports: []corev1.ServicePort{{Name: "gateway", Port: int32(d.opts.GatewayPort),
				TargetPort: intstr.FromInt32(int32(d.opts.GatewayPort))}},
		},
	}
	if _, err := d.cli.CoreV1().Services(d.opts.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return apiErr("create the container's service", err)
	}
	return nil
}

// anchor reads the container's Secret and its stored spec.
func (d *Driver) anchor(ctx context.Context, id string) (*corev1.Secret, stored, error) {
	sec, err := d.cli.CoreV1().Secrets(d.opts.Namespace).Get(ctx, d.Name(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, stored{}, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	if err != nil {
		return nil, stored{}, apiErr("read the container's secret", err)
	}
	if sec.Labels[runtime.LabelInstallation] != d.opts.Installation {
		return nil, stored{}, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	var st stored
	if err := json.Unmarshal(sec.Data[keySpec], &st); err != nil {
		return nil, stored{}, fmt.Errorf("kubernetes runtime: the stored spec of %s: %w", id, err)
	}
	return sec, st, nil
}

func (d *Driver) pods(ctx context.Context, id string) ([]corev1.Pod, error) {
	list, err := d.cli.CoreV1().Pods(d.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: d.selector(id)})
	if err != nil {
		return nil, apiErr("list pods", err)
	}
	return list.Items, nil
}

// livePod is the Pod that is (or will be) running: not being deleted and
// not finished; the newest when there are several.
func livePod(pods []corev1.Pod) *corev1.Pod {
	var live *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if live == nil || p.CreationTimestamp.After(live.CreationTimestamp.Time) {
			live = p
		}
	}
	return live
}

// Start implements runtime.Driver.
func (d *Driver) Start(ctx context.Context, id string) error {
	sec, st, err := d.anchor(ctx, id)
	if err != nil {
		return err
	}
	pods, err := d.pods(ctx, id)
	if err != nil {
		return err
	}
	if livePod(pods) != nil {
		return nil
	}
	// Finished Pods (an agent that exited) make way for the new one; one
	// still stopping is left to end in its own time.
	finished := slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	if err := d.deletePods(ctx, finished, 0); err != nil {
		return err
	}
	// The Pod first: the anchor marked started with no Pod yet would read
	// as stopped in between.
	if err := d.makePod(ctx, st); err != nil {
		return err
	}
	return d.mark(ctx, sec, map[string]string{annStarted: "true", annStopped: ""})
}

// mark sets (or, with "", removes) annotations on the anchor; it patches
// nothing when the anchor has them already.
func (d *Driver) mark(ctx context.Context, sec *corev1.Secret, set map[string]string) error {
	same := true
	annotations := map[string]any{}
	for k, v := range set {
		same = same && sec.Annotations[k] == v
		annotations[k] = v
		if v == "" {
			annotations[k] = nil // a merge patch removes a key set to null
		}
	}
	if same {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	_, err := d.cli.CoreV1().Secrets(d.opts.Namespace).Patch(ctx, sec.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	return apiErr("annotate the container's secret", err)
}

// seedScript copies the image's home into a new, empty workspace.
const seedScript = `set -e
if [ -z "$(ls -A /deckhand-seed | grep -v '^lost+found$')" ] && [ -d "$HOME_DIR" ]; then
  cp -a "$HOME_DIR"/. /deckhand-seed/
fi
chown "$(stat -c %u:%g "$HOME_DIR" 2>/dev/null || echo 0:0)" /deckhand-seed
chmod "$(stat -c %a "$HOME_DIR" 2>/dev/null || echo 755)" /deckhand-seed
`

func (d *Driver) makePod(ctx context.Context, st stored) error {
	no := false
	restart := corev1.RestartPolicyNever
	if st.Autostart {
		restart = corev1.RestartPolicyAlways
	}
	var env []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(st.Env)) {
		env = append(env, corev1.EnvVar{Name: k, Value: st.Env[k]})
	}
	mounts := []corev1.VolumeMount{{Name: "workspace", MountPath: d.opts.Home}}
	var items []corev1.KeyToPath
	for _, f := range st.Files {
		mode := int32(f.Mode)
		if mode == 0 {
			mode = 0o400
		}
		items = append(items, corev1.KeyToPath{Key: f.Key, Path: f.Key, Mode: &mode})
		// A sub-path mount is the file itself, not the volume's symlink.
		mounts = append(mounts, corev1.VolumeMount{Name: "files", MountPath: f.Path, SubPath: f.Key, ReadOnly: true})
	}
	ro := int32(0o400)
	volumes := []corev1.Volume{
		{Name: "workspace", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.claimName(st)}}},
		{Name: "files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: d.Name(st.ID), Items: items, DefaultMode: &ro}}},
	}
	if len(items) == 0 {
		volumes = volumes[:1]
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name(st.ID) + "-", Labels: d.labels(st.ID, st.ProjectID)},
		Spec: corev1.PodSpec{
			RestartPolicy:                restart,
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			Hostname:                     d.Name(st.ID), // a DNS label of at most 46 characters
			InitContainers: []corev1.Container{{
				Name: "seed", Image: st.Image, ImagePullPolicy: d.opts.PullPolicy,
				Command:      []string{"/bin/sh", "-c", seedScript},
				Env:          []corev1.EnvVar{{Name: "HOME_DIR", Value: d.opts.Home}},
				VolumeMounts: []corev1.VolumeMount{{Name: "workspace", MountPath: "/deckhand-seed"}},
			}},
			Containers: []corev1.Container{{
				Name: "agent", Image: st.Image, ImagePullPolicy: d.opts.PullPolicy,
				Args: st.Args, Env: env, VolumeMounts: mounts,
				Ports:     []corev1.ContainerPort{{Name: "gateway", ContainerPort: int32(d.opts.GatewayPort)}},
				Resources: resources(st.CPUs, st.MemoryMB),
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
					Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"NET_RAW"},
				}},
			}},
			Volumes: volumes,
		},
	}
	if _, err := d.cli.CoreV1().Pods(d.opts.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return apiErr("create the container's pod", err)
	}
	return nil
}

// resources are the Pod's limits from the spec; the requests are a tenth
// of the CPUs and a quarter of the memory, so an idle sandbox does not
// hold a node's capacity it rarely uses.
func resources(cpus float64, memoryMB int64) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	if cpus > 0 {
		milli := int64(math.Round(cpus * 1000))
		r.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		r.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(milli/10, 1), resource.DecimalSI)
	}
	if memoryMB > 0 {
		r.Limits[corev1.ResourceMemory] = *resource.NewQuantity(memoryMB<<20, resource.BinarySI)
		r.Requests[corev1.ResourceMemory] = *resource.NewQuantity(max(memoryMB<<20/4, 1<<20), resource.BinarySI)
	}
	return r
}

// deletePods deletes pods with the grace period and waits until the API
// no longer holds them.
func (d *Driver) deletePods(ctx context.Context, pods []corev1.Pod, grace time.Duration) error {
	if len(pods) == 0 {
		return nil
	}
	secs := int64(math.Ceil(grace.Seconds()))
	api := d.cli.CoreV1().Pods(d.opts.Namespace)
	for _, p := range pods {
		if err := api.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &secs}); err != nil && !apierrors.IsNotFound(err) {
			return apiErr("delete pod "+p.Name, err)
		}
	}
	return nil
}

// waitGone polls until get answers NotFound for the object what names.
func waitGone[T any](ctx context.Context, what, name string, get func(context.Context, string, metav1.GetOptions) (T, error)) error {
	what += " " + name
	for {
		_, err := get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return apiErr("wait for "+what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubernetes runtime: waiting for %s to go: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitPodsGone polls until the API holds none of pods.
func (d *Driver) waitPodsGone(ctx context.Context, pods []corev1.Pod) error {
	api := d.cli.CoreV1().Pods(d.opts.Namespace)
	for _, p := range pods {
		if err := waitGone(ctx, "pod", p.Name, api.Get); err != nil {
			return err
		}
	}
	return nil
}

// Stop implements runtime.Driver: the Pod goes (the agent gets SIGTERM,
// then SIGKILL after timeout) and Stop returns once the API holds it no
// more; the claim and the anchor stay.
func (d *Driver) Stop(ctx context.Context, id string, timeout time.Duration) error {
	sec, _, err := d.anchor(ctx, id)
	if err != nil {
		return err
	}
	pods, err := d.pods(ctx, id)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return nil
	}
	if err := d.mark(ctx, sec, map[string]string{annStopped: "true"}); err != nil {
		return err
	}
	if err := d.deletePods(ctx, pods, timeout); err != nil {
		return err
	}
	// Stopped means no process of the container runs, as on an engine:
	// wait until the kubelet has ended the Pods (their grace, then a
	// margin for the kubelet to report), so a start right after never
	// runs a second Pod beside a terminating one on the same claim.
	wctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	return d.waitPodsGone(wctx, pods)
}

// Restart implements runtime.Driver.
func (d *Driver) Restart(ctx context.Context, id string, timeout time.Duration) error {
	if err := d.Stop(ctx, id, timeout); err != nil {
		return err
	}
	return d.Start(ctx, id)
}

// Pause implements runtime.Driver: Kubernetes has no freezer.
func (d *Driver) Pause(context.Context, string) error {
	return fmt.Errorf("%w: pause on Kubernetes (stop keeps the workspace)", runtime.ErrNotSupported)
}

// Resume implements runtime.Driver: Kubernetes has no freezer.
func (d *Driver) Resume(context.Context, string) error {
	return fmt.Errorf("%w: resume on Kubernetes", runtime.ErrNotSupported)
}

// Delete implements runtime.Driver: the Pods, the Service and the anchor
// go, and the claim unless keepWorkspace; it returns once the API holds
// none of them.
func (d *Driver) Delete(ctx context.Context, id string, keepWorkspace bool) error {
	name := d.Name(id)
	pods, err := d.pods(ctx, id)
	if err != nil {
		return err
	}
	if err := d.deletePods(ctx, pods, time.Second); err != nil {
		return err
	}
	if err := d.waitPodsGone(ctx, pods); err != nil {
		return err
	}
	var st stored
	if _, s, err := d.anchor(ctx, id); err == nil {
		st = s
	} else if !errors.Is(err, runtime.ErrNotFound) {
		return err
	}
	st.ID = id
	if err := d.cli.CoreV1().Services(d.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return apiErr("delete the container's service", err)
	}
	// A kept workspace mounted here is its own: it goes with a delete of
	// the container it was kept from.
	if !keepWorkspace && st.workspace() == id {
		claims := d.cli.CoreV1().PersistentVolumeClaims(d.opts.Namespace)
		claim := d.claimName(st)
		if err := claims.Delete(ctx, claim, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return apiErr("delete the workspace claim", err)
		}
		if err := waitGone(ctx, "claim", claim, claims.Get); err != nil {
			return err
		}
	}
	// The anchor last: while it is there, a crashed delete is found again.
	if err := d.cli.CoreV1().Secrets(d.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return apiErr("delete the container's secret", err)
	}
	return nil
}

// Inspect implements runtime.Driver.
func (d *Driver) Inspect(ctx context.Context, id string) (runtime.Status, error) {
	sec, err := d.cli.CoreV1().Secrets(d.opts.Namespace).Get(ctx, d.Name(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return runtime.Status{State: runtime.StateMissing}, nil
	}
	if err != nil {
		return runtime.Status{}, apiErr("read the container's secret", err)
	}
	pods, err := d.pods(ctx, id)
	if err != nil {
		return runtime.Status{}, err
	}
	return d.status(sec, pods), nil
}

// List implements runtime.Driver.
func (d *Driver) List(ctx context.Context) (map[string]runtime.Status, error) {
	secs, err := d.cli.CoreV1().Secrets(d.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: d.selector("")})
	if err != nil {
		return nil, apiErr("list secrets", err)
	}
	pods, err := d.pods(ctx, "")
	if err != nil {
		return nil, err
	}
	byID := map[string][]corev1.Pod{}
	for _, p := range pods {
		id := p.Labels[runtime.LabelContainer]
		byID[id] = append(byID[id], p)
	}
	out := map[string]runtime.Status{}
	for i := range secs.Items {
		id := secs.Items[i].Labels[runtime.LabelContainer]
		if id == "" {
			continue
		}
		out[id] = d.status(&secs.Items[i], byID[id])
	}
	return out, nil
}

// status reads a container's state from its anchor and Pods.
func (d *Driver) status(sec *corev1.Secret, pods []corev1.Pod) runtime.Status {
	live := livePod(pods)
	if live == nil {
		if sec.Annotations[annStarted] == "" {
			return runtime.Status{State: runtime.StateCreated}
		}
		reason := "the Pod was deleted"
		if sec.Annotations[annStopped] != "" {
			reason = "stopped"
		}
		// A finished Pod says how its agent ended.
		for i := range pods {
			if r := exitReason(&pods[i]); r != "" {
				reason = r
			}
		}
		return runtime.Status{State: runtime.StateExited, Reason: reason}
	}
	agent := containerStatus(live.Status.ContainerStatuses, "agent")
	for _, s := range append(live.Status.InitContainerStatuses, live.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil && failedWaiting[w.Reason] {
			return runtime.Status{State: runtime.StateDead, Reason: w.Reason + ": " + w.Message}
		}
	}
	if init := containerStatus(live.Status.InitContainerStatuses, "seed"); init != nil {
		if t := init.State.Terminated; t != nil && t.ExitCode != 0 {
			return runtime.Status{State: runtime.StateDead, Reason: "seeding the workspace failed: exit code " + strconv.Itoa(int(t.ExitCode)) + " " + t.Message}
		}
	}
	if agent != nil {
		if r := agent.State.Running; r != nil && live.Status.PodIP != "" {
			return runtime.Status{State: runtime.StateRunning, Addr: net.JoinHostPort(live.Status.PodIP, strconv.Itoa(d.opts.GatewayPort)), StartedAt: r.StartedAt.Time}
		}
		if t := agent.State.Terminated; t != nil {
			return runtime.Status{State: runtime.StateExited, Reason: terminated(t)}
		}
		if t := agent.LastTerminationState.Terminated; t != nil && agent.State.Waiting != nil {
			return runtime.Status{State: runtime.StateExited, Reason: terminated(t)}
		}
	}
	return runtime.Status{State: runtime.StateCreated}
}

// failedWaiting are the waiting reasons that do not pass by themselves.
var failedWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

func containerStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func exitReason(p *corev1.Pod) string {
	if s := containerStatus(p.Status.ContainerStatuses, "agent"); s != nil {
		if t := s.State.Terminated; t != nil {
			return terminated(t)
		}
	}
	return ""
}

func terminated(t *corev1.ContainerStateTerminated) string {
	r := "exit code " + strconv.Itoa(int(t.ExitCode))
	if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
		r += " (" + t.Reason + ")"
	}
	return r
}

// ImageExists implements runtime.Driver: an image some node reports
// holding exists; one no node holds exists only if the pull policy lets
// the node pull it.
func (d *Driver) ImageExists(ctx context.Context, image string) (bool, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return false, nil
	}
	want := reference.TagNameOnly(named).String()
	nodes, err := d.cli.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			// A Role limited to the namespace cannot read nodes: the
			// kubelet's pull is then the check.
			return d.opts.PullPolicy != corev1.PullNever, nil
		}
		return false, apiErr("list nodes", err)
	}
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			if slices.Contains(img.Names, want) || slices.Contains(img.Names, image) {
				return true, nil
			}
		}
	}
	return d.opts.PullPolicy != corev1.PullNever, nil
}

// Snapshot implements runtime.Driver: not offered yet on Kubernetes
// (Capabilities say so); volume snapshots need a CSI driver the cluster
// may not have, and an image commit needs the node's runtime.
func (d *Driver) Snapshot(context.Context, string, string) (runtime.Snapshot, error) {
	return runtime.Snapshot{}, fmt.Errorf("%w: snapshots on Kubernetes", runtime.ErrNotSupported)
}

// DeleteSnapshot implements runtime.Driver: there are none to delete.
func (d *Driver) DeleteSnapshot(context.Context, string) error { return nil }
