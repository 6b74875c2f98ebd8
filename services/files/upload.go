package files

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// WriteInput is one upload: the content comes from Body.
type WriteInput struct {
	Path        string
	Body        io.Reader
	Overwrite   bool
	IfMatch     string // the file's current ETag must be one of these ("*": it must exist)
	IfNoneMatch string // "*": the file must not exist
	SHA256      string // hex; the content must hash to it
	Mode        string // octal; default the replaced file's, else 0644
}

var errTooLarge = errors.New("upload too large")

// body is the request body as a stream: the host streams bodies past its
// buffer threshold, and buffered ones are read from memory.
func body(c fiber.Ctx) io.Reader {
	if r := c.Request().BodyStream(); r != nil {
		return r
	}
	return bytes.NewReader(c.Body())
}

func (s *Service) tooLarge() error {
	return platform.Errorf(platform.CodePayloadTooLarge, "the upload is larger than --files-max-upload (%d bytes)", s.maxUpload).WithDetails("body")
}

// closeOnError wraps a handler that reads a streamed body: when it fails
// before reading the body to its end, the connection is closed after the
// answer, since the unread rest would otherwise be taken for the next
// request.
func closeOnError(h fiber.Handler) fiber.Handler {
	return func(c fiber.Ctx) error {
		err := h(c)
		if err != nil {
			abandonBody(c)
		}
		return err
	}
}

// abandonBody closes the connection after the answer to a request whose
// body is left unread.
func abandonBody(c fiber.Ctx) {
	// Read a little of what is left first (as net/http does), so a client
	// still sending sees the answer rather than a reset.
	if r := c.Request().BodyStream(); r != nil {
		_, _ = io.CopyN(io.Discard, r, 8<<20)
	}
	c.RequestCtx().SetConnectionClose()
}

// capped fails the read that passes --files-max-upload.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

func (s *Service) limit(r io.Reader) io.Reader {
	if s.maxUpload <= 0 {
		return r
	}
	return &capped{r: r, left: s.maxUpload}
}

func tempName(r string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return join(path.Dir(r), "."+path.Base(r)+".deckhand-"+hex.EncodeToString(b[:]))
}

// precondition checks If-Match / If-None-Match / overwrite against the
// current file (fi nil when absent).
func precondition(in WriteInput, fi fs.FileInfo) error {
	if in.IfMatch != "" {
		if fi == nil || !fi.Mode().IsRegular() || !etagMatch(in.IfMatch, etagOf(fi)) {
			return platform.Errorf(platform.CodePreconditionFailed, "%s changed since the ETag in If-Match was read", in.Path).WithDetails("If-Match")
		}
		return nil
	}
	if fi != nil && in.IfNoneMatch != "" && (in.IfNoneMatch == "*" || etagMatch(in.IfNoneMatch, etagOf(fi))) {
		return platform.Errorf(platform.CodePreconditionFailed, "%s exists (If-None-Match)", in.Path).WithDetails("If-None-Match")
	}
	if fi != nil && fi.IsDir() {
		return platform.Errorf(platform.CodeConflict, "%s is a directory", in.Path).WithDetails("path")
	}
	if fi != nil && !in.Overwrite {
		return platform.Errorf(platform.CodeConflict, "%s already exists (overwrite=false)", in.Path).WithDetails("path")
	}
	return nil
}

// Write streams in.Body into a temporary file beside the target, checks
// size and hash, and renames it into place: readers never see half a file,
// and a failed or refused upload leaves the old content and no temporary.
func (s *Service) Write(in WriteInput) (Entry, bool, error) {
	r, err := rel("path", in.Path)
	if err != nil {
		return Entry{}, false, err
	}
	if r == "." {
		return Entry{}, false, platform.Invalid("path", "must name a file, not the root")
	}
	if in.SHA256 != "" {
		if b, err := hex.DecodeString(in.SHA256); err != nil || len(b) != sha256.Size {
			return Entry{}, false, platform.Invalid("sha256", "must be 64 hexadecimal digits")
		}
	}
	mode, err := parseMode("mode", in.Mode, 0)
	if err != nil {
		return Entry{}, false, err
	}
	var old fs.FileInfo
	var tmp string
	var f *os.File
	err = s.id.run(func() error {
		if r, err = s.resolveLinks(in.Path, r); err != nil {
			return err
		}
		if fi, err := s.root.Stat(r); err == nil {
			old = fi
		} else if s.escapeCause(r) {
			return outsideRoot(in.Path)
		}
		if err := precondition(in, old); err != nil {
			return err
		}
		if err := s.mkParents(r); err != nil {
			return err
		}
		tmp = tempName(r)
		var err error
		f, err = s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		return err
	})
	if err != nil {
		return Entry{}, false, fsError(in.Path, err)
	}
	discard := func() { _ = s.id.run(func() error { return s.root.Remove(tmp) }) }
	var h hash.Hash
	var w io.Writer = f
	if in.SHA256 != "" {
		h = sha256.New()
		w = io.MultiWriter(f, h)
	}
	_, err = io.Copy(w, s.limit(in.Body))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		discard()
		if errors.Is(err, errTooLarge) {
			return Entry{}, false, s.tooLarge()
		}
		return Entry{}, false, fsError(in.Path, err)
	}
	if h != nil && !strings.EqualFold(hex.EncodeToString(h.Sum(nil)), in.SHA256) {
		discard()
		return Entry{}, false, platform.Errorf(platform.CodeInvalid, "the content's SHA-256 is %x, not the %s given", h.Sum(nil), in.SHA256).WithDetails("sha256")
	}
	return s.commit(in, r, tmp, mode, discard)
}

// commit renames tmp onto r under the path's lock after checking the
// preconditions again, so of two writers holding the same ETag one wins.
func (s *Service) commit(in WriteInput, r, tmp string, mode fs.FileMode, discard func()) (Entry, bool, error) {
	unlock := s.locks.lock(r)
	var existed bool
	err := s.id.run(func() error {
		var cur fs.FileInfo
		if fi, err := s.root.Stat(r); err == nil {
			cur = fi
		}
		existed = cur != nil
		if err := precondition(in, cur); err != nil {
			return err
		}
		switch {
		case mode != 0:
		case cur != nil:
			mode = cur.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
		default:
			mode = 0o644
		}
		if err := s.root.Chmod(tmp, mode); err != nil {
			return err
		}
		return s.root.Rename(tmp, r)
	})
	unlock()
	if err != nil {
		discard()
		return Entry{}, false, fsError(in.Path, err)
	}
	e, err := s.Stat(apiPath(r))
	return e, existed, err
}

func (s *Service) checkLength(c fiber.Ctx) error {
	if n := c.Request().Header.ContentLength(); s.maxUpload > 0 && int64(n) > s.maxUpload {
		return s.tooLarge()
	}
	return nil
}

func (s *Service) handleUpload(c fiber.Ctx) error {
	if err := s.checkLength(c); err != nil {
		return err
	}
	q := platform.QueryOf(c)
	if ct, params, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); ct == "multipart/form-data" {
		return s.handleMultipart(c, params["boundary"])
	}
	e, existed, err := s.Write(WriteInput{Path: q.String("path"), Body: body(c), Overwrite: q.Bool("overwrite"),
		IfMatch: c.Get(fiber.HeaderIfMatch), IfNoneMatch: c.Get(fiber.HeaderIfNoneMatch),
		SHA256: q.String("sha256"), Mode: q.String("mode")})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, e.ETag)
	if existed {
		return platform.JSON(c, http.StatusOK, e)
	}
	return platform.JSON(c, http.StatusCreated, e)
}

// handleMultipart writes every file part of a form to path/<part's
// filename>, streaming each as it arrives (nothing is spooled to /tmp).
func (s *Service) handleMultipart(c fiber.Ctx, boundary string) error {
	q := platform.QueryOf(c)
	dir := q.String("path")
	if _, err := rel("path", dir); err != nil {
		return err
	}
	mr := multipart.NewReader(s.limit(body(c)), boundary)
	out := []Entry{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if errors.Is(err, errTooLarge) {
			return s.tooLarge()
		}
		if err != nil {
			return platform.Invalid("body", "is not a well-formed multipart form: %v", err)
		}
		// The raw filename: Part.FileName keeps only the base name, and a
		// folder upload names its files relative to the folder.
		_, dp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		name := strings.TrimLeft(dp["filename"], "/")
		if name == "" {
			continue // plain form fields carry nothing to write
		}
		for _, seg := range strings.Split(name, "/") {
			if seg == ".." {
				return platform.Invalid("filename", "must not contain ..: %s", name)
			}
		}
		e, _, err := s.Write(WriteInput{Path: path.Join(dir, name), Body: part, Overwrite: q.Bool("overwrite"), Mode: q.String("mode")})
		if err != nil {
			return err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return platform.Invalid("body", "the form has no file part")
	}
	return platform.JSON(c, http.StatusCreated, out)
}
