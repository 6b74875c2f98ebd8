package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// runImage writes rootfs (scripts/image.sh assembles it) as a one-layer OCI
// image whose entrypoint is the agent, PID 1 of the container.
func runImage(args []string) error {
	fs := newFlags("image")
	version := fs.String("version", "dev", "image version (label and tag annotation)")
	rootfs := fs.String("rootfs", "", "root file system to put in the layer")
	out := fs.String("out", "dist/image", "OCI layout directory to write (replaced)")
	_ = fs.Parse(args)
	if *rootfs == "" {
		return fmt.Errorf("--rootfs is required")
	}
	created := time.Now().UTC()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, *rootfs, created)) }()
		return pr, nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = runtime.GOARCH, "linux", v1.Time{Time: created}
	cf.Config = v1.Config{
		// deckhand as PID 1 becomes the container's init and runs the agent
		// under it. The gateway listens on every address of the container;
		// without a proxy permissions document only loopback passes it.
		Entrypoint:   []string{"/usr/bin/deckhand"},
		Cmd:          []string{"run", "--listen", "0.0.0.0:7700", "--data", "/var/lib/deckhand"},
		Env:          []string{"PATH=/usr/bin:/bin", "DISPLAY=:99", "HOME=/root", "SHELL=/bin/bash"},
		WorkingDir:   "/root",
		ExposedPorts: map[string]struct{}{"7700/tcp": {}},
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "deckhand desktop",
			"org.opencontainers.image.version": *version,
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	p, err := layout.Write(*out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": "latest",
	})); err != nil {
		return err
	}
	d, _ := img.Digest()
	fmt.Printf("%s (image %s, tag latest)\n", *out, d)
	return nil
}

// writeTar writes dir as a layer: owned by root, modes and symlinks kept.
func writeTar(w io.Writer, dir string, mtime time.Time) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = mtime, time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
