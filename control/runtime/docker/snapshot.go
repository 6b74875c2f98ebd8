package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"deckhand/control/runtime"
)

// A snapshot is one image: the container's filesystem committed, with
// the workspace volume's files laid at the home directory in a layer of
// their own. A commit leaves volumes out, so the driver copies the
// workspace into a container made (never started) from the first commit
// and commits that. A container made from the image with a new, empty
// workspace volume gets the files: the engine fills an empty named
// volume from the image's directory it is mounted on.

// snapshotRepo is the repository of snapshot images; the tag is the
// snapshot's id and the labels say whose it is.
const snapshotRepo = "deckhand-snapshot"

// SnapshotImage is the engine's reference of snapshot snap.
func SnapshotImage(snap string) string { return snapshotRepo + ":" + snap }

// Snapshot implements runtime.Driver.
func (d *Driver) Snapshot(ctx context.Context, id, snap string) (runtime.Snapshot, error) {
	if err := checkID(snap); err != nil {
		return runtime.Snapshot{}, err
	}
	c, err := d.existing(ctx, id)
	if err != nil {
		return runtime.Snapshot{}, err
	}
	// Freeze the container for the copy and the commit, so its files and
	// its workspace are of one moment.
	if c.State != nil && c.State.Running && !c.State.Paused {
		if _, err := d.cli.ContainerPause(ctx, c.ID, client.ContainerPauseOptions{}); err != nil {
			return runtime.Snapshot{}, fail("pause for the snapshot", err)
		}
		defer func() {
			_, _ = d.cli.ContainerUnpause(context.WithoutCancel(ctx), c.ID, client.ContainerUnpauseOptions{})
		}()
	}
	// Both commits carry the source's config with the snapshot's label
	// (Podman wants a config in every commit); the staging container is
	// made with the first commit's, so the second has it too.
	cfg := *c.Config
	cfg.Labels = map[string]string{}
	for k, v := range c.Config.Labels {
		cfg.Labels[k] = v
	}
	// A fork's container carries its image's snapshot label: this
	// snapshot's own replaces it.
	cfg.Labels[runtime.LabelSnapshot] = snap
	base, err := d.cli.ContainerCommit(ctx, c.ID, client.ContainerCommitOptions{NoPause: true, Config: &cfg,
		Comment: "deckhand snapshot " + snap + " (filesystem)"})
	if err != nil {
		return runtime.Snapshot{}, fail("commit", err)
	}
	// The first commit is only a step: gone once the snapshot is made
	// (the engine keeps its layers while the snapshot needs them).
	defer func() {
		_, _ = d.cli.ImageRemove(context.WithoutCancel(ctx), base.ID, client.ImageRemoveOptions{})
	}()
	// The staging container is never started. It carries no container
	// label: the reconciler and List must not take it for the container.
	labels := map[string]string{runtime.LabelInstallation: d.opts.Installation, runtime.LabelSnapshot: snap}
	tmp, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: d.ContainerName(id) + "-snap-" + snap,
		Config:     &container.Config{Image: base.ID, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "none"}})
	if err != nil {
		return runtime.Snapshot{}, fail("snapshot: create the staging container", err)
	}
	defer func() { _ = d.remove(context.WithoutCancel(ctx), tmp.ID) }()
	if err := d.copyHome(ctx, c.ID, tmp.ID); err != nil {
		return runtime.Snapshot{}, err
	}
	ref := SnapshotImage(snap)
	if _, err := d.cli.ContainerCommit(ctx, tmp.ID, client.ContainerCommitOptions{Reference: ref, NoPause: true,
		Comment: "deckhand snapshot " + snap, Config: &cfg}); err != nil {
		return runtime.Snapshot{}, fail("commit", err)
	}
	img, err := d.cli.ImageInspect(ctx, ref)
	if err != nil {
		return runtime.Snapshot{}, fail("inspect the snapshot", err)
	}
	return runtime.Snapshot{Image: ref, SizeBytes: img.Size}, nil
}

// copyHome copies the home directory of container src (its workspace
// volume) into container dst's filesystem, owners and modes kept.
func (d *Driver) copyHome(ctx context.Context, src, dst string) error {
	from, err := d.cli.CopyFromContainer(ctx, src, client.CopyFromContainerOptions{SourcePath: d.opts.Home})
	if err != nil {
		return fail("snapshot: read the workspace", err)
	}
	defer from.Content.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(rebase(from.Content, pw, path.Base(d.opts.Home))) }()
	defer pr.Close()
	if _, err := d.cli.CopyToContainer(ctx, dst, client.CopyToContainerOptions{DestinationPath: path.Dir(d.opts.Home),
		Content: pr}); err != nil {
		return fail("snapshot: write the workspace", err)
	}
	return nil
}

// rebase copies a tar archive of a directory with every entry named
// below top, whatever the engine named them: Docker names them top/...,
// Podman's socket does so for a running container but /... for a paused
// one. The first entry (the directory itself) tells which.
func rebase(r io.Reader, w io.Writer, top string) error {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	first, prefix := true, false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		name := strings.Trim(path.Clean("/"+h.Name), "/")
		if first {
			first, prefix = false, name != top
		}
		if prefix {
			name = path.Join(top, name)
		}
		if h.Typeflag == tar.TypeDir {
			name += "/"
		}
		h.Name = name
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}

// DeleteSnapshot implements runtime.Driver. An image another
// installation labelled, or none of the snapshot's, is never touched.
func (d *Driver) DeleteSnapshot(ctx context.Context, snap string) error {
	if err := checkID(snap); err != nil {
		return err
	}
	ref := SnapshotImage(snap)
	img, err := d.cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fail("inspect the snapshot", err)
	}
	if img.Config == nil || img.Config.Labels[runtime.LabelInstallation] != d.opts.Installation || img.Config.Labels[runtime.LabelSnapshot] != snap {
		return fmt.Errorf("docker runtime: image %q was not made by installation %q", ref, d.opts.Installation)
	}
	_, err = d.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "in use"):
		return fmt.Errorf("docker runtime: snapshot %s: %w: %v", snap, runtime.ErrInUse, err)
	}
	return fail("remove the snapshot", err)
}
