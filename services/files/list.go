package files

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"deckhand/platform/fault"
)

// Listing is a directory's entries.
type Listing struct {
	Path      string  `json:"path" required:"true"`
	Entries   []Entry `json:"entries" required:"true" doc:"sorted by path; with depth > 1 a directory's entries follow it"`
	Truncated bool    `json:"truncated" required:"true" doc:"more entries than limit"`
}

// ListQuery is the query of GET /api/v1/files.
type ListQuery struct {
	Path   string `query:"path" required:"true" doc:"absolute path within the root, e.g. /notes/a.txt"`
	Depth  int    `query:"depth" minimum:"1" maximum:"32" default:"1" doc:"levels to descend"`
	Hidden bool   `query:"hidden" default:"false" doc:"include names starting with a dot"`
	Limit  int    `query:"limit" minimum:"1" maximum:"1000000" default:"10000" doc:"at most this many entries"`
}

// ListDir reads a directory (GET /api/v1/files, the files_list tool),
// descending depth levels (1 = its entries only); symbolic links to
// directories are listed, never followed.
func (s *Service) ListDir(ctx context.Context, in ListQuery) (Listing, error) {
	r, err := rel("path", in.Path)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Path: apiPath(r), Entries: []Entry{}}
	err = s.id.run(func() error {
		fi, err := s.root.Stat(r)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fault.Errorf(fault.CodeConflict, "%s is not a directory", in.Path).WithDetails("path")
		}
		return s.walk(ctx, r, in, 1, &out)
	})
	if err != nil {
		return Listing{}, fsError(in.Path, err)
	}
	return out, nil
}

func (s *Service) walk(ctx context.Context, dir string, in ListQuery, level int, out *Listing) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	infos, more, err := s.readDir(dir, in.Hidden, in.Limit-len(out.Entries))
	if err != nil {
		return err
	}
	for _, fi := range infos {
		if fi == nil {
			continue // vanished between reading the names and lstat
		}
		if len(out.Entries) >= in.Limit {
			out.Truncated = true
			return nil
		}
		r := path.Join(dir, fi.Name())
		out.Entries = append(out.Entries, s.entryOf(r, fi))
		if fi.Mode()&fs.ModeType == fs.ModeDir && level < in.Depth {
			if err := s.walk(ctx, r, in, level+1, out); err != nil && !isSkippable(err) {
				return err
			}
			if out.Truncated {
				return nil
			}
		}
	}
	if more {
		out.Truncated = true
	}
	return nil
}

// readDir returns the sorted entries of dir (hidden names left out unless
// asked for), lstat'ing at most want+1 of them: names come first
// (getdents only), then two workers lstat relative to the directory, so a
// folder of 100,000 files is described in parallel. more reports names
// beyond want.
func (s *Service) readDir(dir string, hidden bool, want int) ([]fs.FileInfo, bool, error) {
	sub, err := s.root.OpenRoot(dir)
	if err != nil {
		return nil, false, err
	}
	defer sub.Close()
	d, err := sub.Open(".")
	if err != nil {
		return nil, false, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, false, err
	}
	if !hidden {
		names = slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") })
	}
	slices.Sort(names)
	more := false
	want = max(want, 0)
	if len(names) > want {
		names, more = names[:want+1], true
	}
	infos := make([]fs.FileInfo, len(names))
	stat := func(lo, hi int) {
		_ = s.id.run(func() error {
			for i := lo; i < hi; i++ {
				infos[i], _ = sub.Lstat(names[i])
			}
			return nil
		})
	}
	if len(names) < 4096 {
		stat(0, len(names))
		return infos, more, nil
	}
	var wg sync.WaitGroup
	half := len(names) / 2
	wg.Go(func() { stat(half, len(names)) })
	stat(0, half)
	wg.Wait()
	return infos, more, nil
}

// isSkippable: a subdirectory that vanished or may not be read is left out
// of a deep listing rather than failing it.
func isSkippable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)
}

// isDir reports whether r is a directory (a final link followed).
func (s *Service) isDir(r string) (bool, error) {
	var dir bool
	err := s.id.run(func() error {
		fi, err := s.root.Stat(r)
		dir = err == nil && fi.IsDir()
		return err
	})
	return dir, err
}

// Stat describes one path without following a final symbolic link.
func (s *Service) Stat(p string) (Entry, error) {
	r, err := rel("path", p)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	err = s.id.run(func() error {
		fi, err := s.root.Lstat(r)
		if err == nil {
			e = s.entryOf(r, fi)
		}
		return err
	})
	return e, fsError(p, err)
}
