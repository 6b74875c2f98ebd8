package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"deckhand/control/runtime"
)

// Moving a workspace between engines goes through the engine API only:
// on each engine a helper container (made, never started) mounts the
// workspace volume, the source's archive endpoint streams the volume's
// files and the target's extracts them. A made container's volumes are
// reachable through the archive endpoint, so nothing runs and no network
// is needed. Helpers carry the installation's label and
// runtime.LabelWorkspaceCopy, never a container's label, so the
// reconciler's list skips them, and they are removed before the call
// returns.

var _ runtime.WorkspaceMover = (*Driver)(nil)

// helperMount is where a helper mounts the workspace volume.
const helperMount = "/workspace"

// WorkspaceVolume is the engine's name of the volume of workspace ws (the
// id of the container that made it).
func (d *Driver) WorkspaceVolume(ws string) string {
	return d.volumeName(runtime.Spec{ID: ws})
}

// helper makes a stopped helper container of image that mounts volume
// vol; remove takes it away.
func (d *Driver) helper(ctx context.Context, ws, image, vol string) (id string, remove func(), err error) {
	l := map[string]string{runtime.LabelInstallation: d.opts.Installation, runtime.LabelWorkspaceCopy: ws}
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Labels: l, User: "0:0", Entrypoint: []string{"/nonexistent-helper-never-started"}},
		HostConfig: &container.HostConfig{NetworkMode: "none",
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: helperMount}}},
	})
	if err != nil {
		if errors.Is(fail("create", err), runtime.ErrUnavailable) {
			return "", nil, fail("create the copy helper", err)
		}
		if ok, ierr := d.ImageExists(ctx, image); ierr == nil && !ok {
			return "", nil, fmt.Errorf("docker: the copy helper's image %q: %w", image, runtime.ErrImageMissing)
		}
		return "", nil, fail("create the copy helper", err)
	}
	return res.ID, func() {
		_, _ = d.cli.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true})
	}, nil
}

// HasWorkspace says whether the engine holds workspace ws's volume.
func (d *Driver) HasWorkspace(ctx context.Context, ws string) (bool, error) {
	if err := checkID(ws); err != nil {
		return false, err
	}
	vols, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: d.filter(ws)})
	if err != nil {
		return false, fail("volume list", err)
	}
	for _, v := range vols.Items {
		if d.owns(v.Labels, ws) && v.Name == d.WorkspaceVolume(ws) {
			return true, nil
		}
	}
	return false, nil
}

// ExportWorkspace streams workspace ws's files as a tar archive whose
// entries are relative to the workspace's root; image is what the helper
// is made of (any image the engine holds). The caller closes it.
func (d *Driver) ExportWorkspace(ctx context.Context, ws, image string) (io.ReadCloser, error) {
	ok, err := d.HasWorkspace(ctx, ws)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("docker: workspace %s: %w", ws, runtime.ErrNotFound)
	}
	id, remove, err := d.helper(ctx, ws, image, d.WorkspaceVolume(ws))
	if err != nil {
		return nil, err
	}
	// "dir/." archives the directory's content under the name ".": the
	// target extracts it into its own mount.
	res, err := d.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path.Join(helperMount) + "/."})
	if err != nil {
		remove()
		return nil, fail("export the workspace", err)
	}
	return &closeAll{ReadCloser: res.Content, after: remove}, nil
}

// ImportWorkspace makes workspace ws's volume (labelled for it and
// project, as a create makes it) and fills it from archive, an
// ExportWorkspace stream.
func (d *Driver) ImportWorkspace(ctx context.Context, ws, project, image string, archive io.Reader) error {
	if err := checkID(ws); err != nil {
		return err
	}
	vol := d.WorkspaceVolume(ws)
	if err := d.ensureVolume(ctx, vol, runtime.Spec{ID: ws, ProjectID: project}); err != nil {
		return err
	}
	id, remove, err := d.helper(ctx, ws, image, vol)
	if err != nil {
		return err
	}
	defer remove()
	if _, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: helperMount, Content: archive}); err != nil {
		return fail("import the workspace", err)
	}
	return nil
}

// closeAll runs after once the reader is closed.
type closeAll struct {
	io.ReadCloser
	after func()
}

func (c *closeAll) Close() error {
	err := c.ReadCloser.Close()
	c.after()
	return err
}
