package files

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path"
	"strconv"

	"deckhand/platform/fault"
)

// MkdirRequest creates a directory.
type MkdirRequest struct {
	Path    string `json:"path" required:"true"`
	Parents *bool  `json:"parents,omitempty" doc:"create missing parents and accept an existing directory (default true)"`
	Mode    string `json:"mode,omitempty" doc:"octal permission bits (default 0755), before the umask"`
}

// MoveRequest moves or renames; CopyRequest copies (directories recursively).
type MoveRequest struct {
	From      string `json:"from" required:"true"`
	To        string `json:"to" required:"true"`
	Overwrite bool   `json:"overwrite,omitempty" doc:"replace an existing destination (a directory only if empty for move); default false answers 409"`
}

// ChmodRequest changes permission bits.
type ChmodRequest struct {
	Path      string `json:"path" required:"true"`
	Mode      string `json:"mode" required:"true" doc:"octal, e.g. 0644 or 755 (setuid/setgid/sticky as 4000/2000/1000)"`
	Recursive bool   `json:"recursive,omitempty"`
}

// ChownRequest changes owner and/or group (names or numeric ids).
type ChownRequest struct {
	Path      string `json:"path" required:"true"`
	Owner     string `json:"owner,omitempty"`
	Group     string `json:"group,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
}

func parseMode(field, v string, def fs.FileMode) (fs.FileMode, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o7777 {
		return 0, fault.Invalid(field, "must be octal permission bits from 0 to 7777")
	}
	m := fs.FileMode(n & 0o777)
	for _, b := range specialBits {
		if n&b.bit != 0 {
			m |= b.mode
		}
	}
	return m, nil
}

// Validate checks the request.
func (r *MkdirRequest) Validate() error {
	_, err := parseMode("mode", r.Mode, 0)
	return err
}

// Validate checks the request.
func (r *ChmodRequest) Validate() error {
	if r.Mode == "" {
		return fault.Invalid("mode", "is required")
	}
	_, err := parseMode("mode", r.Mode, 0)
	return err
}

// Validate checks the request.
func (r *ChownRequest) Validate() error {
	if r.Owner == "" && r.Group == "" {
		return fault.Invalid("owner", "owner or group is required")
	}
	return nil
}

// MakeDir creates a directory.
func (s *Service) MakeDir(_ context.Context, in MkdirRequest) (Entry, error) {
	r, err := rel("path", in.Path)
	if err != nil {
		return Entry{}, err
	}
	mode, err := parseMode("mode", in.Mode, 0o755)
	if err != nil {
		return Entry{}, err
	}
	err = s.id.run(func() error {
		if in.Parents == nil || *in.Parents {
			return s.root.MkdirAll(r, mode)
		}
		return s.root.Mkdir(r, mode)
	})
	if err != nil {
		return Entry{}, fsError(in.Path, err)
	}
	return s.Stat(apiPath(r))
}

// MoveEntry renames From to To (atomic within one file system).
func (s *Service) MoveEntry(_ context.Context, in MoveRequest) (Entry, error) {
	return s.transfer(in, false, s.root.Rename)
}

// CopyEntry copies From to To: files with their mode, directories
// recursively, symbolic links as links (never followed).
func (s *Service) CopyEntry(_ context.Context, in MoveRequest) (Entry, error) {
	return s.transfer(in, true, s.copyTree)
}

// transfer moves or copies (do) From to To once the source exists and
// the destination may be written: an existing one answers 409 unless
// overwrite, and with replace it is removed first (rename replaces it
// itself). Parents of To are created.
func (s *Service) transfer(in MoveRequest, replace bool, do func(from, to string) error) (Entry, error) {
	from, to, err := s.pair(in.From, in.To)
	if err != nil {
		return Entry{}, err
	}
	err = s.id.run(func() error {
		if _, err := s.root.Lstat(from); err != nil {
			return fsError(in.From, err)
		}
		if _, err := s.root.Lstat(to); err == nil {
			if !in.Overwrite {
				return fault.Errorf(fault.CodeConflict, "%s already exists (overwrite=false)", in.To).WithDetails("to")
			}
			if replace {
				if err := s.root.RemoveAll(to); err != nil {
					return fsError(in.To, err)
				}
			}
		}
		if err := s.mkParents(to); err != nil {
			return fsError(in.To, err)
		}
		return fsError(in.To, do(from, to))
	})
	if err != nil {
		return Entry{}, err
	}
	return s.Stat(apiPath(to))
}

func (s *Service) pair(a, b string) (string, string, error) {
	from, err := rel("from", a)
	if err != nil {
		return "", "", err
	}
	to, err := rel("to", b)
	if err != nil {
		return "", "", err
	}
	if from == "." || to == "." {
		return "", "", fault.Invalid("from", "the root itself cannot be moved or replaced")
	}
	if to == from || (len(to) > len(from) && to[:len(from)+1] == from+"/") {
		return "", "", fault.Invalid("to", "must not be the source or inside it")
	}
	return from, to, nil
}

func (s *Service) mkParents(r string) error {
	if d := path.Dir(r); d != "." {
		return s.root.MkdirAll(d, 0o755)
	}
	return nil
}

func (s *Service) copyTree(from, to string) error {
	fi, err := s.root.Lstat(from)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := s.root.Readlink(from)
		if err != nil {
			return err
		}
		return s.root.Symlink(target, to)
	case fi.IsDir():
		if err := s.root.Mkdir(to, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		err := s.eachName(from, func(n string) error { return s.copyTree(path.Join(from, n), path.Join(to, n)) })
		if err != nil {
			return err
		}
		return s.root.Chmod(to, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	case fi.Mode().IsRegular():
		src, _, err := s.openRegular(from)
		if errors.Is(err, errNotRegular) {
			return nil // became a fifo or the like since the Lstat: skipped
		}
		if err != nil {
			return err
		}
		defer src.Close()
		dst, err := s.root.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if err != nil {
			return err
		}
		_, err = io.Copy(dst, src) // copy_file_range where the kernel can
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = s.root.Remove(to)
		}
		return err
	}
	return nil // sockets, fifos, devices are not copied
}

// Remove deletes a file, a link, an empty directory, or with recursive a
// whole tree.
func (s *Service) Remove(_ context.Context, in DeleteQuery) error {
	p, recursive := in.Path, in.Recursive
	r, err := rel("path", p)
	if err != nil {
		return err
	}
	if r == "." {
		return fault.Invalid("path", "the root itself cannot be deleted")
	}
	return s.id.run(func() error {
		fi, err := s.root.Lstat(r)
		if err != nil {
			return fsError(p, err)
		}
		if recursive {
			return fsError(p, s.root.RemoveAll(r))
		}
		err = s.root.Remove(r)
		if fi.IsDir() && errors.Is(err, fs.ErrExist) { // ENOTEMPTY too
			return fault.Errorf(fault.CodeConflict, "%s is a directory that is not empty (recursive=true deletes it with its contents)", p).WithDetails("recursive")
		}
		return fsError(p, err)
	})
}

// ChangeMode changes permission bits.
func (s *Service) ChangeMode(_ context.Context, in ChmodRequest) (Entry, error) {
	r, err := rel("path", in.Path)
	if err != nil {
		return Entry{}, err
	}
	mode, _ := parseMode("mode", in.Mode, 0)
	return s.change(in.Path, r, in.Recursive, func(p string, fi fs.FileInfo) error {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil // Linux has no lchmod; a link's bits mean nothing
		}
		return s.root.Chmod(p, mode)
	})
}

// ChangeOwner changes owner and group; links themselves are changed
// (lchown).
func (s *Service) ChangeOwner(_ context.Context, in ChownRequest) (Entry, error) {
	r, err := rel("path", in.Path)
	if err != nil {
		return Entry{}, err
	}
	uid, err := lookupID("owner", "user", in.Owner, user.Lookup, func(u *user.User) string { return u.Uid })
	if err != nil {
		return Entry{}, err
	}
	gid, err := lookupID("group", "group", in.Group, user.LookupGroup, func(g *user.Group) string { return g.Gid })
	if err != nil {
		return Entry{}, err
	}
	return s.change(in.Path, r, in.Recursive, func(p string, _ fs.FileInfo) error { return s.root.Lchown(p, uid, gid) })
}

// change calls fn on r (p's) and, with recursive, everything under it,
// and describes p after.
func (s *Service) change(p, r string, recursive bool, fn func(string, fs.FileInfo) error) (Entry, error) {
	if err := s.id.run(func() error { return s.each(r, recursive, fn) }); err != nil {
		return Entry{}, fsError(p, err)
	}
	return s.Stat(p)
}

// lookupID is the id v names in field: a number, else the id of the user
// or group (kind) look finds by that name (id reads it); -1 when v is
// empty, which lchown leaves alone.
func lookupID[T any](field, kind, v string, look func(string) (T, error), id func(T) string) (int, error) {
	if v == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return n, nil
	}
	found, err := look(v)
	if err != nil {
		return 0, fault.Invalid(field, "names no %s of this system: %s", kind, v)
	}
	return strconv.Atoi(id(found))
}

// each calls fn on r and, with recursive, everything under it (links not
// followed).
func (s *Service) each(r string, recursive bool, fn func(string, fs.FileInfo) error) error {
	fi, err := s.root.Lstat(r)
	if err != nil {
		return err
	}
	if err := fn(r, fi); err != nil {
		return err
	}
	if !recursive || !fi.IsDir() {
		return nil
	}
	return s.eachName(r, func(n string) error { return s.each(path.Join(r, n), true, fn) })
}

// eachName calls fn with the name of each entry of directory dir (inside
// the root), unsorted, until fn fails.
func (s *Service) eachName(dir string, fn func(string) error) error {
	d, err := s.openDir(dir)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}
