package deckhand

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
}

// Transfer describes a finished upload or download.
type Transfer struct {
	Path       string
	Size       int64
	SHA256     string // hex, of the bytes moved; the service's hash agrees
	Reconnects int    // dropped connections resumed from
}

// Upload writes size bytes read from r to path in the container with the
// files service's resumable upload: bytes go in PATCHes of UploadChunk; a
// dropped connection resumes at the offset the service holds (the chunk
// in flight is kept in memory to resend). The file appears at path only
// once complete, and Upload then compares the service's SHA-256 with its
// own.
func (c *Container) Upload(ctx context.Context, path string, r io.Reader, size int64, o UploadOptions) (*Transfer, error) {
	in := files.UploadRequest{Path: path, Size: int(size)}
	ow := !o.NoOverwrite
	in.Overwrite = &ow
	if o.Mode != "" {
		in.Mode = &o.Mode
	}
	if o.SHA256 != "" {
		in.Sha256 = &o.SHA256
	}
	var up files.Upload
	if err := c.Call(ctx, http.MethodPost, "files", "/api/v1/files/uploads", nil, in, &up); err != nil {
		return nil, err
	}
	h := sha256.New()
	t := &Transfer{Path: path, Size: size}
	buf := make([]byte, 0, min(int64(UploadChunk), size))
	var bufStart int64
	off := int64(up.Offset)
	fails := 0
	for !up.Complete {
		if off >= bufStart+int64(len(buf)) { // the chunk is acknowledged: read the next
			bufStart += int64(len(buf))
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
		next, err := c.patch(ctx, up.Id, off, buf[off-bufStart:])
		if err == nil {
			up, off, fails = next, int64(next.Offset), 0
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
		if gerr := c.Call(ctx, http.MethodGet, "files", "/api/v1/files/uploads/"+url.PathEscape(up.Id), nil, nil, &cur); gerr == nil {
			if int64(cur.Offset) > off {
				fails = 0
			}
			up, off = cur, int64(cur.Offset)
		}
		t.Reconnects++
		if fails++; fails > MaxReconnects {
			return nil, fmt.Errorf("deckhand: upload %s stopped at byte %d of %d: %w", path, off, size, err)
		}
		if err := sleepCtx(ctx, backoff(fails)); err != nil {
			return nil, err
		}
	}
	t.SHA256 = hex.EncodeToString(h.Sum(nil))
	sum, err := c.Checksum(ctx, path)
	if err != nil {
		return nil, err
	}
	if sum.Sha256 != t.SHA256 || int64(sum.Size) != size {
		return nil, fmt.Errorf("deckhand: upload %s: the container holds %d bytes with SHA-256 %s, sent %d with %s", path, sum.Size, sum.Sha256, size, t.SHA256)
	}
	return t, nil
}

func (c *Container) abandon(id string) error {
	return c.Call(context.Background(), http.MethodDelete, "files", "/api/v1/files/uploads/"+url.PathEscape(id), nil, nil, nil)
}

func (c *Container) patch(ctx context.Context, id string, off int64, b []byte) (files.Upload, error) {
	path := "/api/v1/files/uploads/" + url.PathEscape(id)
	req, err := c.request(ctx, http.MethodPatch, "files", path, nil, bytes.NewReader(b))
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
	if err := jsonUnmarshal(raw, &up); err != nil {
		return files.Upload{}, err
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

// Download writes path's content to w. A dropped connection resumes with
// a ranged GET from the bytes already written (If-Range on the file's
// ETag, so a file that changed meanwhile is an error, never a splice), and
// at the end the service's SHA-256 and ETag must match what was written.
func (c *Container) Download(ctx context.Context, path string, w io.Writer) (*Transfer, error) {
	h := sha256.New()
	t := &Transfer{Path: path}
	var etag string
	var have int64
	total := int64(-1)
	fails := 0
	for total < 0 || have < total {
		start := have
		err := c.fetchRange(ctx, path, &etag, &have, &total, io.MultiWriter(w, h))
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
		if errors.As(err, &apiErr) || errors.Is(err, errChanged) || errors.As(err, new(writeError)) {
			return nil, err
		}
		if have > start {
			fails = 0
		}
		t.Reconnects++
		if fails++; fails > MaxReconnects {
			return nil, fmt.Errorf("deckhand: download %s stopped at byte %d: %w", path, have, err)
		}
		if err := sleepCtx(ctx, backoff(fails)); err != nil {
			return nil, err
		}
	}
	t.Size, t.SHA256 = have, hex.EncodeToString(h.Sum(nil))
	sum, err := c.Checksum(ctx, path)
	if err != nil {
		return nil, err
	}
	if sum.Etag != etag || sum.Sha256 != t.SHA256 {
		return nil, fmt.Errorf("%w: %s changed while it was read (SHA-256 %s, read %s)", errChanged, path, sum.Sha256, t.SHA256)
	}
	return t, nil
}

var errChanged = errors.New("deckhand: the file changed during the download")

type writeError struct{ error }

func (c *Container) fetchRange(ctx context.Context, path string, etag *string, have, total *int64, w io.Writer) error {
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
		return fmt.Errorf("%w: %s answered from byte 0 to a resume at byte %d", errChanged, path, *have)
	case resp.StatusCode == http.StatusPartialContent:
		cr := resp.Header.Get("Content-Range")
		var a, b, size int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(cr, "bytes "), "%d-%d/%d", &a, &b, &size); err != nil || a != *have {
			return fmt.Errorf("deckhand: download %s: answered range %q to a request from byte %d", path, cr, *have)
		}
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
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
