package deckhand

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/deckhand-dev/deckhand/sdk/go/api/files"
)

// UploadChunk is the most one PATCH of an upload carries, and the most an
// upload holds in memory to resend after a dropped connection.
const UploadChunk = 8 << 20

// UploadOptions tune Upload.
type UploadOptions struct {
	// NoOverwrite refuses to replace an existing file (409 CONFLICT).
	NoOverwrite bool
	// Mode is the new file's permission bits in octal, e.g. "0644".
	Mode string
	// SHA256 (hex), when known, is checked by the service before the file
	// is put in place; Upload checks its own hash of what it sent anyway.
	SHA256 string
	// Resume is the id of an upload an earlier run left unfinished (the
	// one Started was told) of the same bytes to the same path: it goes
	// on at the offset the service holds, the bytes before it read from r
	// only to be hashed. An id the service no longer knows starts over.
	Resume string
	// Started is told the upload's id once the service holds it, for a
	// caller that keeps it to resume in a later run.
	Started func(id string)
	// Progress is told how many of the size bytes have gone (it may go
	// back after a reconnect).
	Progress func(done, size int64)
	// Retries is how many dropped connections in a row, without progress
	// between them, the upload survives (0: MaxReconnects).
	Retries int
}

func retries(n int) int {
	if n <= 0 {
		return MaxReconnects
	}
	return n
}

// Transfer describes a finished upload or download.
type Transfer struct {
	Path       string
	Size       int64
	SHA256     string // hex, of the bytes moved; the service's hash agrees
	Reconnects int    // dropped connections resumed from
	// ResumedFrom is how many bytes an earlier run had already moved.
	ResumedFrom int64
}

// Upload writes size bytes read from r to path in the container with the
// files service's resumable upload: bytes go in PATCHes of UploadChunk; a
// dropped connection resumes at the offset the service holds (the chunk
// in flight is kept in memory to resend). The file appears at path only
// once complete, and Upload then compares the service's SHA-256 with its
// own.
func (c *Container) Upload(ctx context.Context, path string, r io.Reader, size int64, o UploadOptions) (*Transfer, error) {
	var up files.Upload
	if o.Resume != "" {
		err := c.Call(ctx, http.MethodGet, "files", "/api/v1/files/uploads/"+url.PathEscape(o.Resume), nil, nil, &up)
		var apiErr *Error
		switch {
		case err == nil && up.Size == int(size):
		case err == nil, errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound:
			up = files.Upload{} // finished, expired or another file's: start over
		default:
			return nil, err
		}
	}
	if up.Id == "" {
		in := files.UploadRequest{Path: path, Size: int(size)}
		ow := !o.NoOverwrite
		in.Overwrite = &ow
		if o.Mode != "" {
			in.Mode = &o.Mode
		}
		if o.SHA256 != "" {
			in.Sha256 = &o.SHA256
		}
		if err := c.Call(ctx, http.MethodPost, "files", "/api/v1/files/uploads", nil, in, &up); err != nil {
			return nil, err
		}
	}
	if o.Started != nil {
		o.Started(up.Id)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(int64, int64) {}
	}
	h := sha256.New()
	t := &Transfer{Path: path, Size: size, ResumedFrom: -1}
	off := int64(up.Offset)
	// What the service already holds is read only to be hashed.
	if _, err := io.CopyN(h, r, off); err != nil {
		return nil, fmt.Errorf("deckhand: upload %s: reading the %d bytes sent before: %w", path, off, err)
	}
	progress(off, size)
	buf := make([]byte, 0, min(int64(UploadChunk), size-off))
	bufStart := off
	fails := 0
	for !up.Complete {
		if end := bufStart + int64(len(buf)); off >= end {
			// The chunk is acknowledged (and any bytes after it a lookup
			// found the service holds, which are only hashed): read the next.
			if _, err := io.CopyN(h, r, off-end); err != nil {
				_ = c.abandon(up.Id)
				return nil, fmt.Errorf("deckhand: upload %s: reading byte %d of %d: %w", path, end, size, err)
			}
			bufStart = off
			n := min(int64(UploadChunk), size-bufStart)
			buf = buf[:n]
			if _, err := io.ReadFull(r, buf); err != nil {
				_ = c.abandon(up.Id)
				return nil, fmt.Errorf("deckhand: upload %s: reading byte %d of %d: %w", path, bufStart, size, err)
			}
			h.Write(buf)
		}
		if off < bufStart {
			return nil, fmt.Errorf("deckhand: upload %s: the service holds %d bytes, behind the %d this upload can resend from", path, off, bufStart)
		}
		next, err := c.patch(ctx, up.Id, off, buf[off-bufStart:], func(n int64) { progress(off+n, size) })
		if err == nil {
			if t.ResumedFrom < 0 {
				// Where the first PATCH the service took began: a lookup's
				// offset can lag behind a connection the agent has not yet
				// seen end, and the PATCH waits for it.
				t.ResumedFrom = off
			}
			up, off, fails = next, int64(next.Offset), 0
			progress(off, size)
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.Status != http.StatusConflict && apiErr.Status < 500 {
			return nil, err // refused (hash, permission, size): over, not interrupted
		}
		var cur files.Upload
		gerr := c.Call(ctx, http.MethodGet, "files", "/api/v1/files/uploads/"+url.PathEscape(up.Id), nil, nil, &cur)
		if errors.As(gerr, &apiErr) && apiErr.Status == http.StatusNotFound {
			return nil, fmt.Errorf("deckhand: upload %s: the agent forgot upload %s (%v); start it again", path, up.Id, err)
		}
		if gerr == nil {
			if int64(cur.Offset) > off {
				fails = 0
			}
			up, off = cur, int64(cur.Offset)
			progress(off, size)
		}
		t.Reconnects++
		if fails++; fails > retries(o.Retries) {
			return nil, fmt.Errorf("deckhand: upload %s stopped at byte %d of %d after %d failed tries: %w", path, off, size, fails, err)
		}
		if err := sleepCtx(ctx, backoff(fails)); err != nil {
			return nil, err
		}
	}
	t.ResumedFrom = max(t.ResumedFrom, 0) // an empty file completes at its start
	t.SHA256 = hex.EncodeToString(h.Sum(nil))
	if up.Entry != nil && up.Entry.Path != "" {
		t.Path = up.Entry.Path
	}
	sum, err := c.Checksum(ctx, t.Path)
	if err != nil {
		return nil, err
	}
	if sum.Sha256 != t.SHA256 || int64(sum.Size) != size {
		return nil, fmt.Errorf("%w: upload %s: the container holds %d bytes with SHA-256 %s, sent %d with %s", ErrChecksum, path, sum.Size, sum.Sha256, size, t.SHA256)
	}
	return t, nil
}

func (c *Container) abandon(id string) error {
	return c.Call(context.Background(), http.MethodDelete, "files", "/api/v1/files/uploads/"+url.PathEscape(id), nil, nil, nil)
}

// patch sends b from off, telling sent how many of b's bytes have gone.
func (c *Container) patch(ctx context.Context, id string, off int64, b []byte, sent func(int64)) (files.Upload, error) {
	path := "/api/v1/files/uploads/" + url.PathEscape(id)
	req, err := c.request(ctx, http.MethodPatch, "files", path, nil, &countingReader{r: bytes.NewReader(b), fn: sent})
	if err != nil {
		return files.Upload{}, err
	}
	req.ContentLength = int64(len(b))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
	resp, err := c.Do(req)
	if err != nil {
		return files.Upload{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return files.Upload{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return files.Upload{}, errorOf(http.MethodPatch, path, resp.StatusCode, raw)
	}
	var up files.Upload
	if err := json.Unmarshal(raw, &up); err != nil {
		return files.Upload{}, fmt.Errorf("deckhand: unreadable answer: %w", err)
	}
	return up, nil
}

// Checksum is the files service's SHA-256 and ETag of path.
func (c *Container) Checksum(ctx context.Context, path string) (*files.Checksum, error) {
	var sum files.Checksum
	if err := c.Call(ctx, http.MethodGet, "files", "/api/v1/files/checksum", url.Values{"path": {path}}, nil, &sum); err != nil {
		return nil, err
	}
	return &sum, nil
}

// DownloadOptions tune DownloadWith.
type DownloadOptions struct {
	// From and ETag continue a download an earlier run stopped: w
	// already holds From bytes of the version of the file ETag names, and
	// Have reads them back to be hashed. A file that changed since is
	// ErrChanged.
	From int64
	ETag string
	Have io.Reader
	// Progress is told how many bytes of the file w holds, and its size
	// once known (-1 before).
	Progress func(done, size int64)
	// Retries is how many dropped connections in a row, without progress
	// between them, the download survives (0: MaxReconnects).
	Retries int
}

// Download writes path's content to w. A dropped connection resumes with
// a ranged GET from the bytes already written (If-Range on the file's
// ETag, so a file that changed meanwhile is an error, never a splice), and
// at the end the service's SHA-256 and ETag must match what was written.
func (c *Container) Download(ctx context.Context, path string, w io.Writer) (*Transfer, error) {
	return c.DownloadWith(ctx, path, w, DownloadOptions{})
}

// DownloadWith is Download with options: a resumed start, progress.
func (c *Container) DownloadWith(ctx context.Context, path string, w io.Writer, o DownloadOptions) (*Transfer, error) {
	h := sha256.New()
	t := &Transfer{Path: path, ResumedFrom: o.From}
	etag, have := o.ETag, o.From
	if have > 0 {
		if o.Have == nil || etag == "" {
			return nil, errors.New("deckhand: DownloadOptions.From: needs ETag and Have")
		}
		if _, err := io.CopyN(h, o.Have, have); err != nil {
			return nil, fmt.Errorf("deckhand: download %s: hashing the %d bytes held: %w", path, have, err)
		}
	}
	progress := o.Progress
	if progress == nil {
		progress = func(int64, int64) {}
	}
	// The service hashes its file while the bytes come: the check costs
	// no pass of its own.
	sumCtx, cancelSum := context.WithCancel(ctx)
	defer cancelSum()
	type sumResult struct {
		sum *files.Checksum
		err error
	}
	sumC := make(chan sumResult, 1)
	go func() {
		s, err := c.Checksum(sumCtx, path)
		sumC <- sumResult{s, err}
	}()
	total := int64(-1)
	fails := 0
	for total < 0 || have < total {
		start := have
		err := c.fetchRange(ctx, path, &etag, &have, &total, io.MultiWriter(w, h), progress)
		if err == nil && total >= 0 && have >= total {
			break
		}
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var apiErr *Error
		if errors.As(err, &apiErr) || errors.Is(err, ErrChanged) || errors.As(err, new(writeError)) {
			return nil, err
		}
		if have > start {
			fails = 0
		}
		t.Reconnects++
		if fails++; fails > retries(o.Retries) {
			return nil, fmt.Errorf("deckhand: download %s stopped at byte %d after %d failed tries: %w", path, have, fails, err)
		}
		if err := sleepCtx(ctx, backoff(fails)); err != nil {
			return nil, err
		}
	}
	t.Size, t.SHA256 = have, hex.EncodeToString(h.Sum(nil))
	sr := <-sumC
	if sr.err == nil && sr.sum.Etag != etag {
		// Hashed before a change the bytes already show: ask again.
		sr.sum, sr.err = c.Checksum(ctx, path)
	}
	if sr.err != nil {
		return nil, sr.err
	}
	if sr.sum.Etag != etag || int64(sr.sum.Size) != have {
		return nil, fmt.Errorf("%w: %s changed while it was read", ErrChanged, path)
	}
	if sr.sum.Sha256 != t.SHA256 {
		return nil, fmt.Errorf("%w: download %s: the bytes read hash to %s, the container's file to %s", ErrChecksum, path, t.SHA256, sr.sum.Sha256)
	}
	return t, nil
}

// ErrChecksum is wrapped by a transfer's error when the bytes moved do
// not hash to what the container's file holds: nothing of them is kept.
var ErrChecksum = errors.New("deckhand: the bytes moved differ from the container's file")

// ErrChanged is wrapped by a download's error when the file changed in
// the container while it was read (or since the run it resumes): start it
// again from the first byte.
var ErrChanged = errors.New("deckhand: the file changed during the download")

type writeError struct{ error }

// countingReader tells fn how many bytes have been read through it.
type countingReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 && c.fn != nil {
		c.n += int64(n)
		c.fn(c.n)
	}
	return n, err
}

func (c *Container) fetchRange(ctx context.Context, path string, etag *string, have, total *int64, w io.Writer, progress func(done, size int64)) error {
	p := "/api/v1/files/content"
	req, err := c.request(ctx, http.MethodGet, "files", p, url.Values{"path": {path}}, nil)
	if err != nil {
		return err
	}
	if *have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(*have, 10)+"-")
		req.Header.Set("If-Range", *etag)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && *have == 0:
		*etag, *total = resp.Header.Get("ETag"), resp.ContentLength
		if *total < 0 {
			return fmt.Errorf("deckhand: download %s: the answer has no length", path)
		}
	case resp.StatusCode == http.StatusOK:
		return fmt.Errorf("%w: %s answered from byte 0 to a resume at byte %d", ErrChanged, path, *have)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && *have > 0:
		// A resume whose bytes are all there already.
		var size int64
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes */%d", &size); err != nil || size != *have {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			return errorOf(http.MethodGet, p, resp.StatusCode, raw)
		}
		*total = size
		return nil
	case resp.StatusCode == http.StatusPartialContent:
		cr := resp.Header.Get("Content-Range")
		var a, b, size int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(cr, "bytes "), "%d-%d/%d", &a, &b, &size); err != nil || a != *have {
			return fmt.Errorf("deckhand: download %s: answered range %q to a request from byte %d", path, cr, *have)
		}
		*total = size
	default:
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return errorOf(http.MethodGet, p, resp.StatusCode, raw)
	}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return writeError{werr}
			}
			*have += int64(n)
			progress(*have, *total)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
