package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"deckhand/control/runtime"
)

// Moving a workspace in and out of a cluster goes through the API server
// only, as `kubectl cp` does: a helper Pod of the container's own image
// mounts the workspace claim and sleeps, and the driver runs tar in it
// over the exec subresource (WebSocket, else SPDY), its output being the
// export and its input the import. The helper carries the installation's
// label and runtime.LabelWorkspaceCopy, never a container's label, so
// lists and watches skip it; it is deleted before the call returns (an
// export's when its stream is closed), and a helper a crashed control
// plane left ends by its active deadline. The image must hold tar and
// sleep; the Role needs create on pods/exec.

var _ runtime.WorkspaceMover = (*Driver)(nil)

// copyMount is where a helper Pod mounts the workspace claim.
const copyMount = "/workspace"

// copyDeadline is the longest a helper Pod lives, so one a crash left
// ends by itself.
const copyDeadline = 6 * time.Hour

// HasWorkspace implements runtime.WorkspaceMover: whether the cluster
// holds workspace ws's claim.
func (d *Driver) HasWorkspace(ctx context.Context, ws string) (bool, error) {
	if !labelValue.MatchString(ws) {
		return false, fmt.Errorf("kubernetes runtime: workspace id %q: must be 1-63 letters, digits, '_', '.' or '-'", ws)
	}
	pvc, err := d.cli.CoreV1().PersistentVolumeClaims(d.opts.Namespace).Get(ctx, d.claimName(stored{ID: ws}), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, apiErr("read the workspace claim", err)
	}
	return pvc.Labels[runtime.LabelInstallation] == d.opts.Installation && pvc.DeletionTimestamp == nil, nil
}

// ExportWorkspace implements runtime.WorkspaceMover: tar's archive of
// the claim's root, read through exec in a helper Pod.
func (d *Driver) ExportWorkspace(ctx context.Context, ws, image string) (io.ReadCloser, error) {
	ok, err := d.HasWorkspace(ctx, ws)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("kubernetes runtime: workspace %s: %w", ws, runtime.ErrNotFound)
	}
	pod, remove, err := d.copyHelper(ctx, ws, image)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	ectx, cancel := context.WithCancel(ctx)
	e := &exported{PipeReader: pr, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		err := d.exec(ectx, pod, []string{"tar", "--numeric-owner", "-C", copyMount, "-cf", "-", "."}, nil, pw)
		e.mu.Lock()
		if !e.closing {
			e.err = err
		}
		e.mu.Unlock()
		// A nil error ends the reader's stream with io.EOF.
		_ = pw.CloseWithError(err)
	}()
	e.stop = func() {
		cancel()
		<-e.done
		remove()
	}
	return e, nil
}

// exported is an export's stream. Close ends the exec and removes the
// helper; it answers how the exec ended when it ended before the Close,
// so an archive cut short is never taken for a whole one.
type exported struct {
	*io.PipeReader
	done    chan struct{}
	stop    func()
	mu      sync.Mutex
	closing bool
	closed  bool
	err     error
}

func (e *exported) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closing, e.closed = true, true
	err := e.err
	e.mu.Unlock()
	_ = e.PipeReader.Close()
	e.stop()
	return err
}

// ImportWorkspace implements runtime.WorkspaceMover: the claim is made as
// a create makes it, then archive is extracted into it through exec in a
// helper Pod. A Pod of the container made later finds it not empty and
// seeds nothing from the image.
func (d *Driver) ImportWorkspace(ctx context.Context, ws, project, image string, archive io.Reader) error {
	if !labelValue.MatchString(ws) {
		return fmt.Errorf("kubernetes runtime: workspace id %q: must be 1-63 letters, digits, '_', '.' or '-'", ws)
	}
	if project != "" && !labelValue.MatchString(project) {
		return fmt.Errorf("kubernetes runtime: project id %q: must be 1-63 letters, digits, '_', '.' or '-'", project)
	}
	if err := d.ensureClaim(ctx, stored{ID: ws, ProjectID: project}); err != nil {
		return err
	}
	pod, remove, err := d.copyHelper(ctx, ws, image)
	if err != nil {
		return err
	}
	defer remove()
	return d.exec(ctx, pod, []string{"tar", "--numeric-owner", "-C", copyMount, "-xf", "-"}, archive, io.Discard)
}

// copyHelper makes a helper Pod of image mounting workspace ws's claim
// and answers its name once it runs; remove deletes it and waits until
// the API holds it no more.
func (d *Driver) copyHelper(ctx context.Context, ws, image string) (string, func(), error) {
	no := false
	root := int64(0)
	deadline := int64(copyDeadline.Seconds())
	grace := int64(0)
	api := d.cli.CoreV1().Pods(d.opts.Namespace)
	pod, err := api.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name(ws) + "-copy-",
			Labels: map[string]string{runtime.LabelInstallation: d.opts.Installation, runtime.LabelWorkspaceCopy: ws}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "copy", Image: image, ImagePullPolicy: d.opts.PullPolicy,
				// The agent's image runs as root; tar needs root to read
				// every file and give each its owner back.
				Command:         []string{"sleep", fmt.Sprint(deadline)},
				SecurityContext: &corev1.SecurityContext{RunAsUser: &root},
				VolumeMounts:    []corev1.VolumeMount{{Name: "workspace", MountPath: copyMount}},
			}},
			Volumes: []corev1.Volume{{Name: "workspace", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.claimName(stored{ID: ws})}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, apiErr("create the workspace copy's pod", err)
	}
	remove := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := api.Delete(rctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
			return
		}
		_ = waitGone(rctx, "pod", pod.Name, api.Get)
	}
	for {
		p, err := api.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			remove()
			return "", nil, apiErr("read the workspace copy's pod", err)
		}
		if why := helperFailed(p); why != "" {
			remove()
			if strings.Contains(why, "ErrImageNeverPull") || strings.Contains(why, "ImagePull") || strings.Contains(why, "InvalidImageName") {
				return "", nil, fmt.Errorf("kubernetes runtime: the workspace copy's image %q: %w: %s", image, runtime.ErrImageMissing, why)
			}
			return "", nil, fmt.Errorf("kubernetes runtime: the workspace copy's pod: %s", why)
		}
		if s := containerStatus(p.Status.ContainerStatuses, "copy"); s != nil && s.State.Running != nil {
			return pod.Name, remove, nil
		}
		select {
		case <-ctx.Done():
			remove()
			return "", nil, fmt.Errorf("kubernetes runtime: waiting for the workspace copy's pod: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// helperFailed says why a helper Pod will never run; "" while it may.
func helperFailed(p *corev1.Pod) string {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return "it ended: " + p.Status.Reason + " " + p.Status.Message
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && failedWaiting[w.Reason] {
			return w.Reason + ": " + w.Message
		}
		if t := s.State.Terminated; t != nil {
			return "it ended: " + terminated(t)
		}
	}
	return ""
}

// exec runs cmd in a helper Pod's container with stdin (none when nil)
// and its output to stdout; a command that fails answers its exit and
// what it wrote on stderr.
func (d *Driver) exec(ctx context.Context, pod string, cmd []string, stdin io.Reader, stdout io.Writer) error {
	req := d.cli.CoreV1().RESTClient().Post().Resource("pods").Namespace(d.opts.Namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "copy", Command: cmd, Stdin: stdin != nil, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	// A stream lasts as long as the copy: no client timeout.
	cfg := rest.CopyConfig(d.cfg)
	cfg.Timeout = 0
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return fmt.Errorf("kubernetes runtime: exec: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("kubernetes runtime: exec: %w", err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("kubernetes runtime: exec: %w", err)
	}
	stderr := &tailBuffer{max: 4096}
	var in *readErr
	if stdin != nil {
		// The exec ends stdin on a read error as at its end: tar could
		// take an archive cut at a file's boundary for a whole one.
		in = &readErr{r: stdin}
		stdin = in
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if in != nil && in.failed() != nil {
		return fmt.Errorf("kubernetes runtime: reading the archive for the workspace copy: %w", in.failed())
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("kubernetes runtime: %s in the workspace copy's pod: %w: %s", cmd[0], err, msg)
		}
		return apiErr(cmd[0]+" in the workspace copy's pod", err)
	}
	return nil
}

// readErr remembers the first error other than io.EOF its reader
// answered; the exec may still read after it returned.
type readErr struct {
	r   io.Reader
	mu  sync.Mutex
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return n, err
}

func (r *readErr) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
