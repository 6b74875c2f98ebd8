package files

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

	"deckhand/platform/fault"
	"deckhand/platform/openapi"
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

func (s *Service) tooLarge() error {
	return fault.Errorf(fault.CodePayloadTooLarge, "the upload is larger than --files-max-upload (%d bytes)", s.maxUpload).WithDetails("body")
}

// limit fails the read that passes --files-max-upload with an
// *http.MaxBytesError.
func (s *Service) limit(r io.Reader) io.Reader {
	if s.maxUpload <= 0 {
		return r
	}
	return http.MaxBytesReader(nil, io.NopCloser(r), s.maxUpload)
}

func tempName(r string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return path.Join(path.Dir(r), "."+path.Base(r)+".deckhand-"+hex.EncodeToString(b[:]))
}

// precondition checks If-Match / If-None-Match / overwrite against the
// current file (fi nil when absent).
func precondition(in WriteInput, fi fs.FileInfo) error {
	if in.IfMatch != "" {
		if fi == nil || !fi.Mode().IsRegular() || !etagMatch(in.IfMatch, etagOf(fi)) {
			return fault.Errorf(fault.CodePreconditionFailed, "%s changed since the ETag in If-Match was read", in.Path).WithDetails("If-Match")
		}
		return nil
	}
	if fi != nil && in.IfNoneMatch != "" && (in.IfNoneMatch == "*" || etagMatch(in.IfNoneMatch, etagOf(fi))) {
		return fault.Errorf(fault.CodePreconditionFailed, "%s exists (If-None-Match)", in.Path).WithDetails("If-None-Match")
	}
	if fi != nil && fi.IsDir() {
		return fault.Errorf(fault.CodeConflict, "%s is a directory", in.Path).WithDetails("path")
	}
	if fi != nil && !in.Overwrite {
		return fault.Errorf(fault.CodeConflict, "%s already exists (overwrite=false)", in.Path).WithDetails("path")
	}
	return nil
}

// Write streams in.Body into a temporary file beside the target, checks
// size and hash, and renames it into place: readers never see half a file,
// and a failed or refused upload leaves the old content and no temporary.
func (s *Service) Write(in WriteInput) (Entry, bool, error) {
	r, err := fileRel(in.Path)
	if err != nil {
		return Entry{}, false, err
	}
	if err := checkSHA256(in.SHA256); err != nil {
		return Entry{}, false, err
	}
	mode, err := parseMode("mode", in.Mode, 0)
	if err != nil {
		return Entry{}, false, err
	}
	r, tmp, f, err := s.prepare(in.Path, in, r)
	if err != nil {
		return Entry{}, false, err
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
		if errors.As(err, new(*http.MaxBytesError)) {
			return Entry{}, false, s.tooLarge()
		}
		return Entry{}, false, fsError(in.Path, err)
	}
	if h != nil && !strings.EqualFold(hex.EncodeToString(h.Sum(nil)), in.SHA256) {
		discard()
		return Entry{}, false, fault.Errorf(fault.CodeInvalid, "the content's SHA-256 is %x, not the %s given", h.Sum(nil), in.SHA256).WithDetails("sha256")
	}
	return s.commit(in, r, tmp, mode, discard)
}

// fileRel is rel of a path that must name a file to write, not the root.
func fileRel(p string) (string, error) {
	r, err := rel("path", p)
	if err == nil && r == "." {
		err = fault.Invalid("path", "must name a file, not the root")
	}
	return r, err
}

// checkSHA256 refuses a sha256 that is not a hex SHA-256 (empty is none).
func checkSHA256(v string) error {
	if b, err := hex.DecodeString(v); v != "" && (err != nil || len(b) != sha256.Size) {
		return fault.Invalid("sha256", "must be 64 hexadecimal digits")
	}
	return nil
}

// prepare readies a write of in to r: links in r's final component are
// followed (one leading out is refused), the preconditions checked against
// the file there and its parents created. It answers the resolved target
// and a new temporary beside it, open for writing; p names the path in
// errors.
func (s *Service) prepare(p string, in WriteInput, r string) (string, string, *os.File, error) {
	var tmp string
	var f *os.File
	err := s.id.run(func() error {
		var err error
		if r, err = s.resolveLinks(p, r); err != nil {
			return err
		}
		cur, err := s.root.Stat(r) // nil when there is no file
		if err != nil && s.escapeCause(r) {
			return outsideRoot(p)
		}
		if err := precondition(in, cur); err != nil {
			return err
		}
		if err := s.mkParents(r); err != nil {
			return err
		}
		tmp = tempName(r)
		f, err = s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		return err
	})
	return r, tmp, f, fsError(p, err)
}

// commit renames tmp onto r under the path's lock after checking the
// preconditions again, so of two writers holding the same ETag one wins.
func (s *Service) commit(in WriteInput, r, tmp string, mode fs.FileMode, discard func()) (Entry, bool, error) {
	unlock := s.locks.lock(r)
	var existed bool
	err := s.id.run(func() error {
		cur, _ := s.root.Stat(r) // nil when there is no file
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

// checkLength refuses a body declared larger than --files-max-upload
// before a byte of it is read.
func (s *Service) checkLength(n int64) error {
	if s.maxUpload > 0 && n > s.maxUpload {
		return s.tooLarge()
	}
	return nil
}

// UploadInput is PUT /api/v1/files/content: a raw body, or a multipart
// form of files.
type UploadInput struct {
	PathQuery
	Overwrite     bool   `query:"overwrite" default:"true" doc:"replace an existing file"`
	SHA256        string `query:"sha256" doc:"hex SHA-256 the content must have"`
	Mode          string `query:"mode" doc:"octal permission bits of the written file"`
	IfMatch       string `header:"If-Match" doc:"the file's ETag as last read: the write happens only if it still holds"`
	IfNoneMatch   string `header:"If-None-Match" doc:"*: refuse to replace an existing file"`
	ContentType   string `header:"Content-Type" doc:"multipart/form-data writes each file part to path/<filename>"`
	ContentLength int64  `header:"Content-Length" minimum:"0" doc:"a body declared over --files-max-upload is refused before it is read"`
	Body          io.Reader
}

// Uploaded is the written file (201 new, 200 replaced), or the files of a
// multipart form (201).
type Uploaded struct {
	Status int
	ETag   string `header:"ETag" doc:"the written file's ETag (raw body)"`
	Body   UploadAnswer
}

// UploadAnswer is one Entry for a raw body, a list of them for a form.
type UploadAnswer struct {
	One  *Entry
	Many []Entry
}

// MarshalJSON writes the entry or the list.
func (a UploadAnswer) MarshalJSON() ([]byte, error) {
	if a.One != nil {
		return json.Marshal(a.One)
	}
	return json.Marshal(a.Many)
}

// JSONSchema is Entry, or an array of Entry for a multipart form.
func (UploadAnswer) JSONSchema() map[string]any {
	e := openapi.Schema(Entry{})
	return map[string]any{"oneOf": []any{e, map[string]any{"type": "array", "items": e}}}
}

// Upload writes a raw body to path, or each file part of a multipart form
// to path/<part's filename>.
func (s *Service) Upload(_ context.Context, in UploadInput) (Uploaded, error) {
	if err := s.checkLength(in.ContentLength); err != nil {
		return Uploaded{}, err
	}
	if ct, params, _ := mime.ParseMediaType(in.ContentType); ct == "multipart/form-data" {
		out, err := s.writeMultipart(in, params["boundary"])
		return Uploaded{Status: http.StatusCreated, Body: UploadAnswer{Many: out}}, err
	}
	e, existed, err := s.Write(WriteInput{Path: in.Path, Body: in.Body, Overwrite: in.Overwrite,
		IfMatch: in.IfMatch, IfNoneMatch: in.IfNoneMatch, SHA256: in.SHA256, Mode: in.Mode})
	if err != nil {
		return Uploaded{}, err
	}
	st := http.StatusCreated
	if existed {
		st = http.StatusOK
	}
	return Uploaded{Status: st, ETag: e.ETag, Body: UploadAnswer{One: &e}}, nil
}

// writeMultipart writes every file part of a form to path/<part's
// filename>, streaming each as it arrives (nothing is spooled to /tmp).
func (s *Service) writeMultipart(in UploadInput, boundary string) ([]Entry, error) {
	dir := in.Path
	if _, err := rel("path", dir); err != nil {
		return nil, err
	}
	mr := multipart.NewReader(s.limit(in.Body), boundary)
	out := []Entry{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, s.tooLarge()
		}
		if err != nil {
			return nil, fault.Invalid("body", "is not a well-formed multipart form: %v", err)
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
				return nil, fault.Invalid("filename", "must not contain ..: %s", name)
			}
		}
		e, _, err := s.Write(WriteInput{Path: path.Join(dir, name), Body: part, Overwrite: in.Overwrite, Mode: in.Mode})
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fault.Invalid("body", "the form has no file part")
	}
	return out, nil
}
