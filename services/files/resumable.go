package files

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"strconv"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

const uploadBucket = "uploads"

// UploadRequest starts a resumable upload.
type UploadRequest struct {
	Path      string `json:"path" required:"true"`
	Size      int64  `json:"size" required:"true" doc:"total bytes that will be sent"`
	SHA256    string `json:"sha256,omitempty" doc:"hex SHA-256 the whole content must have"`
	Overwrite *bool  `json:"overwrite,omitempty" doc:"replace an existing file (default true)"`
	IfMatch   string `json:"if_match,omitempty" doc:"the target's ETag that must still hold when the upload completes"`
	Mode      string `json:"mode,omitempty" doc:"octal permission bits"`
}

// Upload is a resumable upload's state.
type Upload struct {
	ID        string    `json:"id" required:"true"`
	Path      string    `json:"path" required:"true"`
	Size      int64     `json:"size" required:"true"`
	Offset    int64     `json:"offset" required:"true" doc:"bytes received so far"`
	SHA256    string    `json:"sha256,omitempty"`
	Overwrite bool      `json:"overwrite" required:"true"`
	IfMatch   string    `json:"if_match,omitempty"`
	Mode      string    `json:"mode,omitempty"`
	Created   time.Time `json:"created_at" required:"true"`
	Complete  bool      `json:"complete" required:"true"`
	Entry     *Entry    `json:"entry,omitempty" doc:"the written file, once complete"`
}

// storedUpload keeps the temporary name, which clients never see.
type storedUpload struct {
	Upload
	TempName string    `json:"temp"`
	Touched  time.Time `json:"touched"`
}

// Validate checks the request.
func (r *UploadRequest) Validate() error {
	if r.Size < 0 {
		return fault.Invalid("size", "must be 0 or more")
	}
	if err := checkSHA256(r.SHA256); err != nil {
		return err
	}
	_, err := parseMode("mode", r.Mode, 0)
	return err
}

func (s *Service) loadUpload(id string) (storedUpload, error) {
	var u storedUpload
	if s.deps.Store == nil {
		return u, fault.Errorf(fault.CodeUnavailable, "resumable uploads need the service's store")
	}
	var found bool
	err := s.deps.Store.View(func(tx *store.Tx) error {
		var err error
		found, err = tx.Get(uploadBucket, id, &u)
		return err
	})
	if err != nil {
		return u, fault.Internal("read the upload", err)
	}
	if !found {
		return u, fault.NotFound("upload", id)
	}
	return u, nil
}

func (s *Service) saveUpload(u storedUpload) error {
	u.Touched = s.deps.Clock.Now()
	return s.deps.Store.Update(func(tx *store.Tx) error { return tx.Put(uploadBucket, u.ID, u) })
}

// StartUpload declares a resumable upload (the binder ran in.Validate).
func (s *Service) StartUpload(_ context.Context, in UploadRequest) (UploadStarted, error) {
	if s.maxUpload > 0 && in.Size > s.maxUpload {
		return UploadStarted{}, s.tooLarge()
	}
	if s.deps.Store == nil {
		return UploadStarted{}, fault.Errorf(fault.CodeUnavailable, "resumable uploads need the service's store")
	}
	r, err := fileRel(in.Path)
	if err != nil {
		return UploadStarted{}, err
	}
	overwrite := in.Overwrite == nil || *in.Overwrite
	// As a plain PUT: a link is written through, never replaced, and one
	// leading out is refused now rather than at the last byte.
	_, tmp, f, err := s.prepare(in.Path, WriteInput{Path: apiPath(r), Overwrite: overwrite, IfMatch: in.IfMatch}, r)
	if err != nil {
		return UploadStarted{}, err
	}
	if err := f.Close(); err != nil {
		return UploadStarted{}, fsError(in.Path, err)
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	u := storedUpload{Upload: Upload{ID: hex.EncodeToString(b[:]), Path: apiPath(r), Size: in.Size, SHA256: in.SHA256,
		Overwrite: overwrite, IfMatch: in.IfMatch, Mode: in.Mode, Created: s.deps.Clock.Now().UTC()}, TempName: tmp}
	if err := s.saveUpload(u); err != nil {
		return UploadStarted{}, fault.Internal("record the upload", err)
	}
	if u.Size == 0 {
		if err := s.finishUpload(&u); err != nil {
			return UploadStarted{}, err
		}
	}
	return UploadStarted{Location: "/api/v1/files/uploads/" + u.ID, Body: u.Upload}, nil
}

// GetUpload answers where a resumable upload stands.
func (s *Service) GetUpload(_ context.Context, in UploadRef) (UploadState, error) {
	u, err := s.loadUpload(in.ID)
	if err != nil {
		return UploadState{}, err
	}
	return UploadState{Offset: u.Offset, Body: u.Upload}, nil
}

// AppendInput is a PATCH of a resumable upload: bytes at an offset.
type AppendInput struct {
	UploadRef
	Offset int64 `header:"Upload-Offset" required:"true" minimum:"0" doc:"the offset the body starts at"`
	Body   io.Reader
}

// AppendUpload appends the body at in.Offset, which must be the current
// offset; a connection that breaks keeps what arrived.
func (s *Service) AppendUpload(_ context.Context, in AppendInput) (UploadState, error) {
	id, off := in.ID, in.Offset
	unlock := s.locks.lock("upload:" + id)
	defer unlock()
	u, err := s.loadUpload(id)
	if err != nil {
		return UploadState{}, err
	}
	if u.Complete {
		return UploadState{}, fault.Errorf(fault.CodeConflict, "upload %s is complete", id).WithDetails("offset=%d", u.Offset)
	}
	var f *os.File
	err = s.id.run(func() error {
		var err error
		f, err = s.root.OpenFile(u.TempName, os.O_WRONLY, 0)
		return err
	})
	if err != nil {
		return UploadState{}, fsError(u.Path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return UploadState{}, fsError(u.Path, err)
	}
	u.Offset = fi.Size() // what is on disk is the truth after a crash
	if off != u.Offset {
		f.Close()
		_ = s.saveUpload(u)
		e := fault.Errorf(fault.CodeConflict, "Upload-Offset is %d but the upload holds %d bytes", off, u.Offset).WithDetails("offset=%d", u.Offset)
		e.Headers = offsetHeader(u.Offset)
		return UploadState{}, e
	}
	_, _ = f.Seek(off, io.SeekStart)
	left := u.Size - off
	n, err := io.Copy(f, io.LimitReader(in.Body, left+1))
	over := n > left
	if over {
		_ = f.Truncate(u.Size)
		n = left
	}
	if serr := f.Sync(); err == nil {
		err = serr
	}
	f.Close()
	u.Offset = off + n
	_ = s.saveUpload(u)
	if over {
		return UploadState{}, fault.Errorf(fault.CodePayloadTooLarge, "the body runs past the upload's declared size %d", u.Size).WithDetails("body")
	}
	if err != nil {
		e := fault.AsError(fsError(u.Path, err))
		e.Headers = offsetHeader(u.Offset)
		return UploadState{}, e
	}
	if u.Offset == u.Size {
		if err := s.finishUpload(&u); err != nil {
			return UploadState{}, err
		}
	}
	return UploadState{Offset: u.Offset, Body: u.Upload}, nil
}

func offsetHeader(n int64) map[string]string {
	return map[string]string{"Upload-Offset": strconv.FormatInt(n, 10)}
}

// finishUpload checks the hash and renames the temporary into place.
func (s *Service) finishUpload(u *storedUpload) error {
	r, _ := rel("path", u.Path)
	discard := func() { _ = s.dropUpload(*u) }
	if u.SHA256 != "" {
		f, err := s.root.Open(u.TempName)
		if err != nil {
			return fsError(u.Path, err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return fsError(u.Path, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != u.SHA256 {
			discard()
			return fault.Errorf(fault.CodeInvalid, "the content's SHA-256 is %s, not the %s given; the upload is discarded", got, u.SHA256).WithDetails("sha256")
		}
	}
	mode, _ := parseMode("mode", u.Mode, 0)
	// The path's links again: one may have changed since the start.
	if err := s.id.run(func() error { var err error; r, err = s.resolveLinks(u.Path, r); return err }); err != nil {
		discard()
		return fsError(u.Path, err)
	}
	e, _, err := s.commit(WriteInput{Path: u.Path, Overwrite: u.Overwrite, IfMatch: u.IfMatch}, r, u.TempName, mode, discard)
	if err != nil {
		return err
	}
	u.Complete, u.Entry = true, &e
	_ = s.deps.Store.Update(func(tx *store.Tx) error { return tx.Delete(uploadBucket, u.ID) })
	return nil
}

// AbandonUpload removes a resumable upload and its partial file.
func (s *Service) AbandonUpload(_ context.Context, in UploadRef) error {
	u, err := s.loadUpload(in.ID)
	if err != nil {
		return err
	}
	if err := s.dropUpload(u); err != nil {
		return fault.Internal("forget the upload", err)
	}
	return nil
}

// dropUpload removes u's partial file and forgets the upload.
func (s *Service) dropUpload(u storedUpload) error {
	_ = s.id.run(func() error { return s.root.Remove(u.TempName) })
	return s.deps.Store.Update(func(tx *store.Tx) error { return tx.Delete(uploadBucket, u.ID) })
}

// uploadTable is the resumable uploads by id, with the time each was
// last touched indexed for the sweep of abandoned ones.
var uploadTable = store.Declare(uploadBucket, []store.Field[storedUpload]{
	store.Time("touched", func(u *storedUpload) time.Time { return u.Touched }),
}, store.Index{Fields: []string{"touched"}})

// sweepUploads drops resumable uploads untouched for longer than age (and
// their partial files) when the service starts, so abandoned uploads do
// not fill the disk.
func (s *Service) sweepUploads(age time.Duration) {
	if s.deps.Store == nil {
		return
	}
	var stale []storedUpload
	_ = s.deps.Store.View(func(tx *store.Tx) error {
		var err error
		stale, _, err = store.All[storedUpload](tx, uploadTable, store.Query{
			Filters: []store.Filter{store.Where("touched", store.Lt, s.deps.Clock.Now().Add(-age))}})
		return err
	})
	for _, u := range stale {
		_ = s.dropUpload(u)
	}
}
