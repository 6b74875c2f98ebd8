package files

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"deckhand/platform"
	"deckhand/platform/fault"
)

// open opens a regular file for reading as the configured user.
func (s *Service) open(p string) (*os.File, os.FileInfo, error) {
	r, err := rel("path", p)
	if err != nil {
		return nil, nil, err
	}
	var f *os.File
	var fi os.FileInfo
	err = s.id.run(func() error {
		var err error
		f, fi, err = s.openRegular(r)
		if err != nil && s.escapeCause(r) {
			return outsideRoot(p)
		}
		return err
	})
	if errors.Is(err, errNotRegular) {
		return nil, nil, fault.Errorf(fault.CodeConflict, "%s is not a regular file (directories download through /api/v1/files/archive)", p).WithDetails("path")
	}
	return f, fi, fsError(p, err)
}

var errNotRegular = errors.New("not a regular file")

// openRegular opens r for reading when it is a regular file (answering
// its FileInfo), else fails with errNotRegular. The open does not wait
// (O_NONBLOCK): opening a fifo for reading would hold the request until a
// writer came, and so would a file swapped for a fifo after its type was
// looked at. Regular files ignore the flag.
func (s *Service) openRegular(r string) (*os.File, fs.FileInfo, error) {
	f, err := s.root.OpenFile(r, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
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
	return slices.Contains([]string{"application/pdf", "text/plain", "application/json", "application/octet-stream"}, t)
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
	bad := fault.Errorf(CodeRangeNotSatisfiable, "range %s is outside the file's %d bytes", spec, size).WithDetails("Range")
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

// DownloadInput names the file to download and how.
type DownloadInput struct {
	PathQuery
	Attachment bool `query:"attachment" default:"false" doc:"add Content-Disposition: attachment"`
	FileConditions
}

// FileConditions are a download's conditional and range headers.
type FileConditions struct {
	IfNoneMatch string `header:"If-None-Match" doc:"ETags the client holds: a match answers 304"`
	Range       string `header:"Range" doc:"one range: bytes=a-b, bytes=a- or bytes=-n (several ranges get the whole file)"`
	IfRange     string `header:"If-Range" doc:"the ETag the range is for: another ETag gets the whole file"`
}

// FileContent is a file's bytes on their way out with their headers.
type FileContent struct {
	Status       int
	Length       int64  `header:"Content-Length"`
	Type         string `header:"Content-Type" doc:"by extension, else sniffed from the first 512 bytes"`
	ETag         string `header:"ETag"`
	LastModified string `header:"Last-Modified"`
	AcceptRanges string `header:"Accept-Ranges"`
	Range        string `header:"Content-Range" doc:"the range sent (206)"`
	Disposition  string `header:"Content-Disposition" doc:"with attachment=true"`
	NoSniff      string `header:"X-Content-Type-Options" doc:"always nosniff"`
	CSP          string `header:"Content-Security-Policy" doc:"the sandbox, for types a browser could run as a page"`
	Body         io.Reader
}

// Download streams a file. The body is the *os.File itself (or a
// LimitedReader over it for a range), which fasthttp hands to the
// connection's ReadFrom: on a TCP connection that is sendfile(2), so the
// bytes never pass through user space.
func (s *Service) Download(_ context.Context, in DownloadInput) (FileContent, error) {
	return s.fileContent(in.Path, in.Attachment, in.FileConditions)
}

func (s *Service) fileContent(p string, attachment bool, cond FileConditions) (FileContent, error) {
	f, fi, err := s.open(p)
	if err != nil {
		return FileContent{}, err
	}
	etag := etagOf(fi)
	out := FileContent{ETag: etag, LastModified: fi.ModTime().UTC().Format(http.TimeFormat), AcceptRanges: "bytes",
		Type: contentType(f, fi.Name()), NoSniff: "nosniff"}
	if !passive(out.Type) {
		out.CSP = platform.SandboxCSP
	}
	if attachment {
		out.Disposition = mime.FormatMediaType("attachment", map[string]string{"filename": fi.Name()})
	}
	if cond.IfNoneMatch != "" && etagMatch(cond.IfNoneMatch, etag) {
		f.Close()
		out.Status = http.StatusNotModified
		return out, nil
	}
	size := fi.Size()
	rh := cond.Range
	if cond.IfRange != "" && cond.IfRange != etag {
		rh = "" // the client's copy is stale: send it all
	}
	start, n, partial, err := parseRange(rh, size)
	if err != nil {
		f.Close()
		e := fault.AsError(err)
		e.Headers = map[string]string{"Content-Range": "bytes */" + strconv.FormatInt(size, 10)}
		return FileContent{}, e
	}
	if !partial {
		out.Length, out.Body = size, f // fasthttp closes f once sent
		return out, nil
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		f.Close()
		return FileContent{}, fsError(p, err)
	}
	out.Status = http.StatusPartialContent
	out.Range = "bytes " + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(start+n-1, 10) + "/" + strconv.FormatInt(size, 10)
	out.Length, out.Body = n, &limitedFile{LimitedReader: io.LimitedReader{R: f, N: n}, f: f}
	return out, nil
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
