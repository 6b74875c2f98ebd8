package files

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// open opens a regular file for reading as the configured user.
func (s *Service) open(p string) (*os.File, os.FileInfo, error) {
	r, err := rel("path", p)
	if err != nil {
		return nil, nil, err
	}
	var f *os.File
	err = s.id.run(func() error {
		var err error
		f, err = s.openRegular(r)
		if err != nil && s.escapeCause(r) {
			return outsideRoot(p)
		}
		return err
	})
	if errors.Is(err, errNotRegular) {
		return nil, nil, platform.Errorf(platform.CodeConflict, "%s is not a regular file (directories download through /api/v1/files/archive)", p).WithDetails("path")
	}
	if err != nil {
		return nil, nil, fsError(p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsError(p, err)
	}
	return f, fi, nil
}

var errNotRegular = errors.New("not a regular file")

// openRegular opens r for reading when it is a regular file, else fails
// with errNotRegular. The open does not wait (O_NONBLOCK): opening a fifo
// for reading would hold the request until a writer came, and so would a
// file swapped for a fifo after its type was looked at. Regular files
// ignore the flag.
func (s *Service) openRegular(r string) (*os.File, error) {
	f, err := s.root.OpenFile(r, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openDir opens directory r for reading its names; anything else fails
// at once (O_DIRECTORY), a fifo included.
func (s *Service) openDir(r string) (*os.File, error) {
	return s.root.OpenFile(r, os.O_RDONLY|syscall.O_DIRECTORY, 0)
}

// contentType is the type by extension, else sniffed from the first bytes.
func contentType(f *os.File, name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	buf := make([]byte, 512)
	n, _ := f.ReadAt(buf, 0)
	return http.DetectContentType(buf[:n])
}

// passive reports whether a browser only displays content of type ct
// (never runs it as a page with scripts): raster images, audio, video,
// fonts, PDF, plain text, JSON and opaque bytes. Everything else (SVG,
// HTML, XML, types nobody knows) is sandboxed. The list is short because
// the sandbox breaks some viewers: Chromium's PDF viewer and Firefox's
// JSON viewer refuse to run in a sandboxed page.
func passive(ct string) bool {
	t, _, _ := mime.ParseMediaType(ct)
	switch {
	case t == "image/svg+xml":
		return false
	case strings.HasPrefix(t, "image/"), strings.HasPrefix(t, "audio/"), strings.HasPrefix(t, "video/"), strings.HasPrefix(t, "font/"):
		return true
	}
	switch t {
	case "application/pdf", "text/plain", "application/json", "application/octet-stream":
		return true
	}
	return false
}

// parseRange reads a single "bytes=" range; ok is false when the header
// should be ignored (absent, several ranges, unknown unit) and err is set
// when the range lies outside the file.
func parseRange(h string, size int64) (start, length int64, ok bool, err error) {
	if !strings.HasPrefix(h, "bytes=") || strings.Contains(h, ",") {
		return 0, 0, false, nil
	}
	spec := strings.TrimSpace(h[len("bytes="):])
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false, nil
	}
	bad := platform.Errorf(CodeRangeNotSatisfiable, "range %s is outside the file's %d bytes", spec, size).WithDetails("Range")
	if a == "" { // suffix: the last b bytes
		n, perr := strconv.ParseInt(b, 10, 64)
		if perr != nil || n < 0 {
			return 0, 0, false, nil
		}
		if n == 0 {
			return 0, 0, false, bad
		}
		n = min(n, size)
		return size - n, n, true, nil
	}
	first, perr := strconv.ParseInt(a, 10, 64)
	if perr != nil || first < 0 {
		return 0, 0, false, nil
	}
	if first >= size {
		return 0, 0, false, bad
	}
	last := size - 1
	if b != "" {
		l, perr := strconv.ParseInt(b, 10, 64)
		if perr != nil || l < first {
			return 0, 0, false, nil
		}
		last = min(l, size-1)
	}
	return first, last - first + 1, true, nil
}

// etagMatch reports whether an If-None-Match / If-Match list names etag
// ("*" matches any existing file).
func etagMatch(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || t == etag || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// handleDownload streams a file. The body is the *os.File itself (or a
// LimitedReader over it for a range), which fasthttp hands to the
// connection's ReadFrom: on a TCP connection that is sendfile(2), so the
// bytes never pass through user space.
func (s *Service) handleDownload(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	return s.serveFile(c, q.String("path"), q.Bool("attachment"))
}

func (s *Service) serveFile(c fiber.Ctx, p string, attachment bool) error {
	f, fi, err := s.open(p)
	if err != nil {
		return err
	}
	etag := etagOf(fi)
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderLastModified, fi.ModTime().UTC().Format(http.TimeFormat))
	c.Set(fiber.HeaderAcceptRanges, "bytes")
	ct := contentType(f, fi.Name())
	c.Set(fiber.HeaderContentType, ct)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	if !passive(ct) {
		platform.Sandbox(c)
	}
	if attachment {
		c.Set(fiber.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": fi.Name()}))
	}
	if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" && etagMatch(inm, etag) {
		f.Close()
		return c.SendStatus(http.StatusNotModified)
	}
	size := fi.Size()
	rh := c.Get(fiber.HeaderRange)
	if ir := c.Get(fiber.HeaderIfRange); ir != "" && ir != etag {
		rh = "" // the client's copy is stale: send it all
	}
	start, n, partial, err := parseRange(rh, size)
	if err != nil {
		f.Close()
		c.Set(fiber.HeaderContentRange, "bytes */"+strconv.FormatInt(size, 10))
		return err
	}
	if !partial {
		c.Status(http.StatusOK)
		return c.SendStream(f, int(size)) // fasthttp closes f once sent
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		f.Close()
		return fsError(p, err)
	}
	c.Status(http.StatusPartialContent)
	c.Set(fiber.HeaderContentRange, "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(start+n-1, 10)+"/"+strconv.FormatInt(size, 10))
	return c.SendStream(&limitedFile{LimitedReader: io.LimitedReader{R: f, N: n}, f: f}, int(n))
}

// limitedFile is a range of a file that closes the file when fasthttp is
// done with it. fasthttp recognises *io.LimitedReader over *os.File for
// sendfile only when passed directly, so the Close matters more here than
// the zero copy: a range is usually small.
type limitedFile struct {
	io.LimitedReader
	f *os.File
}

func (l *limitedFile) Close() error { return l.f.Close() }
