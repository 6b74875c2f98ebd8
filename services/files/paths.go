package files

import (
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"syscall"

	"deckhand/platform/fault"
)

// Codes of the file service, mapped once in platform's code table.
const (
	// CodeOutsideRoot refuses a path that would leave --files-root: a ".."
	// climbing above it, a symbolic link pointing out of it, a loop.
	CodeOutsideRoot = "OUTSIDE_ROOT"
	// CodeInsufficientStorage is a write the disk had no room for (ENOSPC,
	// EDQUOT); nothing partial is left behind.
	CodeInsufficientStorage = "INSUFFICIENT_STORAGE"
	// CodeRangeNotSatisfiable is a Range header outside the file.
	CodeRangeNotSatisfiable = "RANGE_NOT_SATISFIABLE"
)

func init() {
	fault.RegisterCode(CodeOutsideRoot, http.StatusForbidden)
	fault.RegisterCode(CodeInsufficientStorage, http.StatusInsufficientStorage)
	fault.RegisterCode(CodeRangeNotSatisfiable, http.StatusRequestedRangeNotSatisfiable)
}

func outsideRoot(p string) error {
	return fault.Errorf(CodeOutsideRoot, "%s leads outside the root", p).WithDetails("path")
}

// rel turns an API path ("/notes/a.txt") into a path relative to the root
// ("notes/a.txt", "." for the root). Lexical checks come first — a ".."
// that climbs above the root is refused here rather than silently clamped —
// and every access then goes through os.Root, which resolves each
// component with openat and refuses symbolic links that lead out.
func rel(field, p string) (string, error) {
	if p == "" {
		return "", fault.Invalid(field, "is required")
	}
	if strings.ContainsRune(p, 0) {
		return "", fault.Invalid(field, "must not contain NUL")
	}
	if !strings.HasPrefix(p, "/") {
		return "", fault.Invalid(field, "must be absolute within the root (start with /)")
	}
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "", outsideRoot(p)
			}
		default:
			depth++
		}
	}
	c := path.Clean(p)
	if c == "/" {
		return ".", nil
	}
	return strings.TrimPrefix(c, "/"), nil
}

// apiPath turns a root-relative path back into the API's form.
func apiPath(r string) string { return path.Join("/", r) }

// fsError maps a file-system error to a client-safe domain error naming
// the path and, for refusals, the operating system's reason.
func fsError(p string, err error) error {
	var pe *fault.Error
	if errors.As(err, &pe) {
		return pe
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	switch {
	case err == nil:
		return nil
	case isEscape(err), errno == syscall.ELOOP:
		return outsideRoot(p)
	case errors.Is(err, fs.ErrNotExist):
		return fault.NotFound("path", p)
	case errno == syscall.ENOSPC, errno == syscall.EDQUOT:
		return fault.Errorf(CodeInsufficientStorage, "no space left on the device for %s", p).WithDetails("path")
	case errno == syscall.EROFS, errno == syscall.EACCES, errno == syscall.EPERM, errors.Is(err, fs.ErrPermission):
		reason := "permission denied"
		if errno != 0 {
			reason = errno.Error()
		}
		return fault.Errorf(fault.CodeForbidden, "%s: %s", p, reason).WithDetails("path")
	case errors.Is(err, fs.ErrExist), errno == syscall.ENOTEMPTY:
		return fault.Errorf(fault.CodeConflict, "%s already exists or is not empty", p).WithDetails("path")
	case errno == syscall.ENOTDIR:
		return fault.Errorf(fault.CodeConflict, "%s: a part of the path is not a directory", p).WithDetails("path")
	case errno == syscall.EISDIR:
		return fault.Errorf(fault.CodeConflict, "%s is a directory", p).WithDetails("path")
	case errno == syscall.EXDEV:
		return fault.Errorf(fault.CodeConflict, "%s: source and destination are on different file systems", p).WithDetails("path")
	case errno == syscall.ENAMETOOLONG:
		return fault.Invalid("path", "is too long")
	case errno == syscall.EINVAL:
		return fault.Errorf(fault.CodeConflict, "%s: invalid operation (moving a directory into itself?)", p).WithDetails("path")
	}
	return fault.Internal("access "+p, err)
}

// isEscape recognises os.Root's refusal (its error value is unexported).
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// resolveLinks follows symbolic links in r's final component, within the
// root: a write to a link writes its target, as with open(2), instead of
// replacing the link. A link leading out (absolute, or climbing above the
// root) or a loop is OUTSIDE_ROOT. Intermediate components are left to
// os.Root, which follows them and refuses escapes itself.
func (s *Service) resolveLinks(p, r string) (string, error) {
	for i := 0; i < 40; i++ {
		fi, err := s.root.Lstat(r)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return r, nil
		}
		t, err := s.root.Readlink(r)
		if err != nil {
			return "", err
		}
		if path.IsAbs(t) {
			return "", outsideRoot(p)
		}
		r = path.Clean(path.Join(path.Dir(r), t))
		if r == ".." || strings.HasPrefix(r, "../") {
			return "", outsideRoot(p)
		}
	}
	return "", outsideRoot(p)
}

// escapeCause tells whether a failed access to r failed because a
// component is a symbolic link leading out or into a loop (os.Root then
// reports ENOTDIR or ELOOP rather than an escape).
func (s *Service) escapeCause(r string) bool {
	parts := strings.Split(r, "/")
	for i := range parts {
		pre := strings.Join(parts[:i+1], "/")
		fi, err := s.root.Lstat(pre)
		if err != nil {
			return false
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if _, err := s.root.Stat(pre); err != nil && (isEscape(err) || errors.Is(err, syscall.ELOOP)) {
				return true
			}
		}
	}
	return false
}
