package files

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Entry describes one file or directory.
type Entry struct {
	Name     string    `json:"name" required:"true"`
	Path     string    `json:"path" required:"true" doc:"absolute within the root"`
	Type     string    `json:"type" required:"true" enum:"file,dir,symlink,other"`
	Size     int64     `json:"size" required:"true"`
	Mode     string    `json:"mode" required:"true" doc:"permission bits in octal, e.g. 0644"`
	Modified time.Time `json:"modified" required:"true"`
}

// Listing is a directory's entries.
type Listing struct {
	Path      string  `json:"path" required:"true"`
	Entries   []Entry `json:"entries" required:"true"`
	Truncated bool    `json:"truncated" required:"true" doc:"more entries than limit"`
}

// rel turns an API path into a path relative to the root ("." for "/").
func rel(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", platform.Invalid("path", "must not contain NUL")
	}
	if !strings.HasPrefix(p, "/") {
		return "", platform.Invalid("path", "must be absolute within the root (start with /)")
	}
	c := path.Clean(p)
	if c == "/" {
		return ".", nil
	}
	return strings.TrimPrefix(c, "/"), nil
}

func entryOf(dir string, fi fs.FileInfo) Entry {
	t := "other"
	switch {
	case fi.Mode().IsRegular():
		t = "file"
	case fi.IsDir():
		t = "dir"
	case fi.Mode()&fs.ModeSymlink != 0:
		t = "symlink"
	}
	return Entry{Name: fi.Name(), Path: path.Join("/", dir, fi.Name()), Type: t, Size: fi.Size(),
		Mode: fmt.Sprintf("%04o", fi.Mode().Perm()), Modified: fi.ModTime().UTC()}
}

// fsError maps a file-system error to a client-safe domain error.
func fsError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return platform.NotFound("path", p)
	case errors.Is(err, fs.ErrPermission):
		return platform.Errorf(platform.CodeForbidden, "permission denied: %s", p)
	case errors.Is(err, fs.ErrExist):
		return platform.Errorf(platform.CodeConflict, "%s already exists", p).WithDetails("path")
	case strings.Contains(err.Error(), "path escapes from parent"):
		return platform.Invalid("path", "leads outside the root")
	case errors.Is(err, syscall.ENOTDIR):
		return platform.Errorf(platform.CodeConflict, "%s: a part of the path is not a directory", p).WithDetails("path")
	case errors.Is(err, syscall.EISDIR):
		return platform.Errorf(platform.CodeConflict, "%s is a directory", p).WithDetails("path")
	}
	return platform.Internal("access "+p, err)
}

func (s *Service) handleList(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	p := q.String("path")
	r, err := rel(p)
	if err != nil {
		return err
	}
	d, err := s.root.Open(r)
	if err != nil {
		return fsError(p, err)
	}
	defer d.Close()
	infos, err := d.Readdir(-1)
	if err != nil {
		return fsError(p, err)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name() < infos[j].Name() })
	out := Listing{Path: path.Join("/", r), Entries: []Entry{}}
	for _, fi := range infos {
		if !q.Bool("hidden") && strings.HasPrefix(fi.Name(), ".") {
			continue
		}
		if int64(len(out.Entries)) == q.Int("limit") {
			out.Truncated = true
			break
		}
		out.Entries = append(out.Entries, entryOf(r, fi))
	}
	return platform.JSON(c, http.StatusOK, out)
}

func (s *Service) handleRead(c fiber.Ctx) error {
	p := platform.QueryOf(c).String("path")
	r, err := rel(p)
	if err != nil {
		return err
	}
	f, err := s.root.Open(r)
	if err != nil {
		return fsError(p, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fsError(p, err)
	}
	if st.IsDir() {
		f.Close()
		return platform.Errorf(platform.CodeConflict, "%s is a directory", p).WithDetails("path")
	}
	c.Set(fiber.HeaderContentType, "application/octet-stream")
	return c.SendStream(f, int(st.Size())) // fasthttp closes f once sent
}

func (s *Service) handleWrite(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	p := q.String("path")
	r, err := rel(p)
	if err != nil {
		return err
	}
	if r == "." {
		return platform.Invalid("path", "must name a file, not the root")
	}
	if dir := path.Dir(r); dir != "." {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			return fsError(p, err)
		}
	}
	_, statErr := s.root.Stat(r)
	existed := statErr == nil
	if existed && !q.Bool("overwrite") {
		return platform.Errorf(platform.CodeConflict, "%s already exists (overwrite=false)", p).WithDetails("path")
	}
	// Write beside, then rename: a reader never sees half a file and a
	// failed upload leaves the old content.
	tmp := path.Join(path.Dir(r), "."+path.Base(r)+".deckhand-upload")
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fsError(p, err)
	}
	_, werr := f.Write(c.Body())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = s.root.Rename(tmp, r)
	}
	if werr != nil {
		_ = s.root.Remove(tmp)
		return fsError(p, werr)
	}
	fi, err := s.root.Stat(r)
	if err != nil {
		return fsError(p, err)
	}
	status := http.StatusCreated
	if existed {
		status = http.StatusOK
	}
	return platform.JSON(c, status, entryOf(path.Dir(r), fi))
}
