package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"deckhand/control/runtime"
)

// A container's files (its agent token, the control plane's key) reach it
// in one of two ways. With Options.FilesDir, on Docker, the driver writes
// them into a root-only directory of the host, one per container, and the
// engine bind-mounts each file read-only at its path: the engine's inspect
// shows the host path, never the content, and in the container the file
// keeps the host's owner and mode (root, 0400). Otherwise they are copied
// into the container's filesystem by the engine's archive API, which
// mounts the container's root filesystem and its volumes and unpacks in a
// process of its own: on these machines the largest part of a create
// after the engine's start. A rewrite (a warm-pool claim's new token)
// writes the host file in place, so the bind mount, which holds the file's
// inode, sees it.
//
// The bind needs the control plane and the engine on one host and one
// view of its filesystem, a control plane running as root and an engine
// without a user namespace (canBind). When the engine cannot find the directory (a
// control plane in a container of its own, say) the create is refused
// with "bind source path does not exist"; the driver then copies through
// the archive API from then on.

// filesDir is container id's directory of files on the host; empty when
// the driver does not bind files (canBind).
func (d *Driver) filesDir(ctx context.Context, id string, podman bool) string {
	if d.opts.FilesDir == "" || podman || d.noBind.Load() || !d.canBind(ctx) {
		return ""
	}
	return filepath.Join(d.opts.FilesDir, d.ContainerName(id))
}

// canBind says whether a bound file keeps the rules of a secret file: a
// control plane running as root writes it, so in the container it is
// root's and no uid of the image's users owns it; and the engine maps no
// user namespace (userns-remap, rootless), where the container's root
// could not read a file of the host's root. Asked of the engine once.
func (d *Driver) canBind(ctx context.Context) bool {
	switch d.bindable.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	if os.Geteuid() != 0 {
		d.bindable.Store(2)
		return false
	}
	info, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return false // asked again at the next create
	}
	for _, o := range info.Info.SecurityOptions {
		if strings.Contains(o, "name=userns") || strings.Contains(o, "name=rootless") {
			d.bindable.Store(2)
			return false
		}
	}
	d.bindable.Store(1)
	return true
}

// hostName is the name of file f in its container's directory: its index
// in the create's list, then its path flattened (flatPath).
func hostName(i int, f runtime.File) string {
	return strconv.Itoa(i) + "-" + flatPath(f.Path)
}

func flatPath(p string) string { return strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_") }

// fileMode is f's mode on the host: its own, else root's read-only.
func fileMode(f runtime.File) os.FileMode {
	if mode := os.FileMode(f.Mode & 0o7777); mode != 0 {
		return mode
	}
	return 0o400
}

// writeHostFiles writes files into dir (made root-only) and answers their
// bind mounts. Each file is written in place: a running container's bind
// mount holds the inode.
func writeHostFiles(dir string, files []runtime.File) ([]mount.Mount, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("docker runtime: files directory: %w", err)
	}
	mounts := make([]mount.Mount, 0, len(files))
	for i, f := range files {
		p := filepath.Join(dir, hostName(i, f))
		if err := writeInPlace(p, f.Content, fileMode(f)); err != nil {
			return nil, fmt.Errorf("docker runtime: file %q: %w", f.Path, err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: p, Target: f.Path, ReadOnly: true})
	}
	return mounts, nil
}

func writeInPlace(p string, content []byte, mode os.FileMode) error {
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, mode)
	if err != nil {
		return err
	}
	if err := fh.Chmod(mode); err != nil {
		fh.Close()
		return err
	}
	if _, err := fh.Write(content); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Truncate(int64(len(content))); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// rewriteHostFiles writes files over a container's bound ones, when every
// one of them is bound from dir; false: the caller copies them instead.
func rewriteHostFiles(dir string, files []runtime.File) (bool, error) {
	if dir == "" || len(files) == 0 {
		return false, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, nil
	}
	// Bound files are named by their index in the create's list; a
	// rewrite names them by path.
	byPath := map[string]string{}
	for _, e := range entries {
		if _, rest, ok := strings.Cut(e.Name(), "-"); ok {
			byPath[rest] = e.Name()
		}
	}
	for _, f := range files {
		name, ok := byPath[flatPath(f.Path)]
		if !ok {
			return false, nil
		}
		if err := writeInPlace(filepath.Join(dir, name), f.Content, fileMode(f)); err != nil {
			return true, fmt.Errorf("docker runtime: file %q: %w", f.Path, err)
		}
	}
	return true, nil
}

// removeHostFiles removes container id's files from the host.
func (d *Driver) removeHostFiles(id string) error {
	if d.opts.FilesDir == "" {
		return nil
	}
	if err := os.RemoveAll(filepath.Join(d.opts.FilesDir, d.ContainerName(id))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("docker runtime: remove the container's files: %w", err)
	}
	return nil
}

// bindRefused says whether the engine refused a create for a bind source
// it cannot see.
func bindRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "bind source path does not exist")
}

// writeFiles writes files into container id (engine id cid): over its
// bound files when it has them, else through the archive API.
func (d *Driver) writeFiles(ctx context.Context, id, cid string, files []runtime.File) error {
	if d.opts.FilesDir != "" {
		if done, err := rewriteHostFiles(filepath.Join(d.opts.FilesDir, d.ContainerName(id)), files); done {
			return err
		}
	}
	return d.copyFiles(ctx, cid, files)
}

// bindsFrom says whether container c binds a file of dir.
func bindsFrom(c container.InspectResponse, dir string) bool {
	if dir == "" {
		return false
	}
	for _, m := range c.Mounts {
		if m.Type == mount.TypeBind && filepath.Dir(m.Source) == dir {
			return true
		}
	}
	return false
}

// beforeCreate, when set (by a test), runs just before the engine's
// create of a container.
var beforeCreate func()
