package agentapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"deckhand/agent/cli/privfile"
)

// Transfers move files between this machine and the container through the
// files service:
//
//   - an upload hashes the local file, starts a resumable upload with that
//     SHA-256 (POST /api/v1/files/uploads) and PATCHes the bytes from the
//     offset the service holds; the service checks the hash before it
//     renames the file into place. A dropped connection is resumed at the
//     service's offset; a run that ends early (killed, Ctrl-C, too many
//     drops) leaves the upload's id in Resumes, and the same command run
//     again continues it.
//   - a download writes <dest>.deckhand-part with ranged GETs (Range and
//     If-Range on the file's ETag), resumes the same way, and at the end
//     asks the service for the file's SHA-256 and ETag (GET
//     /api/v1/files/checksum): the file is renamed into place only when the
//     ETag is the one the bytes came with and the hashes agree.

// PartSuffix is appended to a download's destination while it is partial.
const PartSuffix = ".deckhand-part"

// chunk is the most one PATCH carries: each ends with an fsync on the
// agent, so what arrived is durable at least this often.
const chunk = 32 << 20

// Progress is told how a transfer advances (nil: nothing is shown).
type Progress interface {
	// Start announces a transfer of total bytes of which done are there.
	Start(label string, total, done int64)
	// Set moves the count to done (it may go back after a reconnect).
	Set(done int64)
	// Finish ends the display.
	Finish()
}

// Result describes a finished transfer (what `cp -o json` prints).
type Result struct {
	Direction   string `json:"direction"` // upload or download
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	// ResumedFrom is how many bytes an earlier run had already moved.
	ResumedFrom int64 `json:"resumed_from"`
	// Reconnects counts dropped connections this run resumed from.
	Reconnects int `json:"reconnects"`
}

// Options tune a transfer.
type Options struct {
	Progress Progress
	Resumes  *Resumes // nil: nothing is remembered across runs
	// Retries is how many drops in a row (without progress between them)
	// a transfer survives; default 5.
	Retries int
	// NoClobber refuses to replace an existing destination (cp -n).
	NoClobber bool
}

func (o *Options) retries() int {
	if o.Retries <= 0 {
		return 5
	}
	return o.Retries
}

func (o *Options) progress() Progress {
	if o.Progress == nil {
		return nopProgress{}
	}
	return o.Progress
}

type nopProgress struct{}

func (nopProgress) Start(string, int64, int64) {}
func (nopProgress) Set(int64)                  {}
func (nopProgress) Finish()                    {}

// Entry is what the files service says about a path (the fields the CLI
// reads).
type Entry struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Type     string `json:"type"`
	Size     int64  `json:"size"`
	Mode     string `json:"mode"`
	ETag     string `json:"etag"`
	Modified string `json:"modified"`
}

// Stat describes a path in the container.
func (c *Client) Stat(ctx context.Context, p string) (*Entry, error) {
	var e Entry
	if err := c.JSON(ctx, http.MethodGet, "files", "/api/v1/files/stat", url.Values{"path": {p}}, nil, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// IsNotFound reports whether err is the service's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// upload is the service's resumable upload record.
type upload struct {
	ID       string `json:"id"`
	Offset   int64  `json:"offset"`
	Size     int64  `json:"size"`
	Complete bool   `json:"complete"`
	Entry    *Entry `json:"entry"`
}

// Upload copies the local file to remote in the container. A remote that
// ends in / or is a directory gets the local file's name.
func (c *Client) Upload(ctx context.Context, local, remote string, o Options) (*Result, error) {
	f, err := os.Open(local)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file: cp copies files", local)
	}
	if remote, err = c.Target(ctx, remote, filepath.Base(local)); err != nil {
		return nil, err
	}
	sum, err := hashFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", local, err)
	}
	abs, _ := filepath.Abs(local)
	key := resumeKey("upload", c.base, remote, abs)
	res := &Result{Direction: "upload", Source: local, Destination: ":" + remote, Size: fi.Size(), SHA256: sum}

	var up upload
	if r, ok := o.Resumes.get(key); ok && r.Size == fi.Size() && r.SHA256 == sum && r.ModTime.Equal(fi.ModTime()) {
		err := c.JSON(ctx, http.MethodGet, "files", "/api/v1/files/uploads/"+url.PathEscape(r.UploadID), nil, nil, &up)
		switch {
		case err == nil:
		case IsNotFound(err): // expired or finished: start again
			up = upload{}
		default:
			return nil, err
		}
	}
	if up.ID == "" {
		req := map[string]any{"path": remote, "size": fi.Size(), "sha256": sum, "overwrite": !o.NoClobber,
			"mode": fmt.Sprintf("%04o", fi.Mode().Perm())}
		if err := c.JSON(ctx, http.MethodPost, "files", "/api/v1/files/uploads", nil, req, &up); err != nil {
			return nil, err
		}
		o.Resumes.put(key, resume{Kind: "upload", Agent: c.base, Remote: remote, Local: abs, UploadID: up.ID,
			Size: fi.Size(), SHA256: sum, ModTime: fi.ModTime()})
	}
	p := o.progress()
	p.Start(filepath.Base(local), fi.Size(), up.Offset)
	defer p.Finish()
	fails := 0
	// ResumedFrom is where the first PATCH the service accepted began: the
	// offset a lookup answers can lag behind a connection the agent has not
	// yet seen end, and the PATCH waits for it.
	res.ResumedFrom = -1
	for !up.Complete {
		start := up.Offset
		next, err := c.patch(ctx, up.ID, f, start, fi.Size(), p)
		if err == nil {
			if res.ResumedFrom < 0 {
				res.ResumedFrom = start
			}
			up = next
			continue
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("upload interrupted at byte %d of %d; run the same command again to resume", start, fi.Size())
		}
		var se *Error
		if errors.As(err, &se) && se.Status != http.StatusConflict && se.Status < 500 {
			// The service refused the upload (hash mismatch, permission,
			// too large): it is over, not interrupted.
			o.Resumes.drop(key)
			return nil, err
		}
		// A drop or an offset disagreement: ask where the service stands.
		cur, gerr := c.uploadState(ctx, up.ID)
		if gerr != nil {
			if IsNotFound(gerr) {
				o.Resumes.drop(key)
				return nil, fmt.Errorf("the agent forgot upload %s (%v); run the command again to start over", up.ID, err)
			}
			cur = up
		}
		if cur.Offset > start {
			fails = 0
		} else if fails++; fails > o.retries() {
			return nil, fmt.Errorf("upload stopped at byte %d of %d after %d failed tries (%v); run the same command again to resume",
				cur.Offset, fi.Size(), fails, err)
		}
		res.Reconnects++
		up = cur
		p.Set(up.Offset)
		if !sleepCtx(ctx, backoff(fails)) {
			return nil, fmt.Errorf("upload interrupted at byte %d of %d; run the same command again to resume", up.Offset, fi.Size())
		}
	}
	o.Resumes.drop(key)
	if res.ResumedFrom < 0 { // an empty file completes at its start
		res.ResumedFrom = 0
	}
	if up.Entry != nil {
		res.Destination = ":" + up.Entry.Path
	}
	return res, nil
}

// Target is where a file named name goes when it is copied to remote: into
// remote when remote ends in / or is a directory in the container, else
// remote itself.
func (c *Client) Target(ctx context.Context, remote, name string) (string, error) {
	if remote == "" {
		return "", errors.New("the container path is empty")
	}
	if strings.HasSuffix(remote, "/") {
		return path.Join(remote, name), nil
	}
	e, err := c.Stat(ctx, remote)
	switch {
	case err == nil && e.Type == "dir":
		return path.Join(remote, name), nil
	case err == nil || IsNotFound(err):
		return remote, nil
	}
	return "", err
}

func (c *Client) uploadState(ctx context.Context, id string) (upload, error) {
	var up upload
	err := c.JSON(ctx, http.MethodGet, "files", "/api/v1/files/uploads/"+url.PathEscape(id), nil, nil, &up)
	return up, err
}

// patch sends up to chunk bytes of f from off.
func (c *Client) patch(ctx context.Context, id string, f *os.File, off, size int64, p Progress) (upload, error) {
	n := min(size-off, chunk)
	body := &countingReader{r: io.NewSectionReader(f, off, n), pos: off, p: p}
	req, err := c.NewRequest(ctx, http.MethodPatch, "files", "/api/v1/files/uploads/"+url.PathEscape(id), nil, body)
	if err != nil {
		return upload{}, err
	}
	req.ContentLength = n
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
	resp, err := c.Send(req)
	if err != nil {
		return upload{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return upload{}, ErrorOf(resp)
	}
	var up upload
	if err := decodeJSON(resp.Body, &up); err != nil {
		return upload{}, fmt.Errorf("agent %s: unreadable upload state: %w", c.base, err)
	}
	return up, nil
}

// Checksum is the files service's answer about one file's content.
type Checksum struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	ETag   string `json:"etag"`
	SHA256 string `json:"sha256"`
}

// Download copies remote from the container to local. A local that ends
// in / or is a directory gets the remote file's name.
func (c *Client) Download(ctx context.Context, remote, local string, o Options) (*Result, error) {
	e, err := c.Stat(ctx, remote)
	if err != nil {
		return nil, err
	}
	if e.Type != "file" {
		return nil, fmt.Errorf(":%s is a %s, not a file: cp copies files", remote, e.Type)
	}
	if strings.HasSuffix(local, string(os.PathSeparator)) {
		local = filepath.Join(local, path.Base(e.Path))
	} else if fi, err := os.Stat(local); err == nil && fi.IsDir() {
		local = filepath.Join(local, path.Base(e.Path))
	}
	if _, err := os.Lstat(local); err == nil && o.NoClobber {
		return nil, fmt.Errorf("%s exists (--no-clobber)", local)
	}
	abs, _ := filepath.Abs(local)
	part := local + PartSuffix
	key := resumeKey("download", c.base, e.Path, abs)
	res := &Result{Direction: "download", Source: ":" + e.Path, Destination: local, Size: e.Size}

	etag := e.ETag
	var have int64
	if r, ok := o.Resumes.get(key); ok && r.ETag == e.ETag {
		if fi, err := os.Stat(part); err == nil && fi.Size() <= e.Size {
			have = fi.Size()
		}
	}
	if have == 0 {
		_ = os.Remove(part)
	}
	res.ResumedFrom = have
	o.Resumes.put(key, resume{Kind: "download", Agent: c.base, Remote: e.Path, Local: abs, ETag: etag, Size: e.Size})
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	// The bytes are hashed as they arrive (after what an earlier run left),
	// and the service hashes its file meanwhile: the check costs no pass
	// of its own on either side.
	h := sha256.New()
	if have > 0 {
		if _, err := io.Copy(h, io.NewSectionReader(out, 0, have)); err != nil {
			return nil, fmt.Errorf("%s: %w", part, err)
		}
	}
	sumCtx, cancelSum := context.WithCancel(ctx)
	defer cancelSum()
	sumC := make(chan checksumResult, 1)
	go func() { sumC <- c.checksum(sumCtx, e.Path) }()

	p := o.progress()
	p.Start(path.Base(e.Path), e.Size, have)
	defer p.Finish()
	fails := 0
	size := e.Size
	// A part that already holds every byte needs no request; an empty file
	// needs one (its answer has no bytes to count).
	done := have == size && size > 0
	for !done {
		start := have
		got, gotETag, total, err := c.fetchRange(ctx, e.Path, etag, have, out, h, p)
		have = got
		if total >= 0 {
			size = total
		}
		if gotETag != etag { // the file changed: fetchRange started again at 0
			etag = gotETag
			o.Resumes.put(key, resume{Kind: "download", Agent: c.base, Remote: e.Path, Local: abs, ETag: etag, Size: size})
		}
		if err == nil {
			done = true
			continue
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("download interrupted at byte %d of %d; run the same command again to resume", have, size)
		}
		var se *Error
		if errors.As(err, &se) && se.Status < 500 {
			return nil, err
		}
		if have > start {
			fails = 0
		} else if fails++; fails > o.retries() {
			return nil, fmt.Errorf("download stopped at byte %d of %d after %d failed tries (%v); run the same command again to resume",
				have, size, fails, err)
		}
		res.Reconnects++
		if !sleepCtx(ctx, backoff(fails)) {
			return nil, fmt.Errorf("download interrupted at byte %d of %d; run the same command again to resume", have, size)
		}
	}
	res.Size = size
	p.Set(size)
	sr := <-sumC
	if sr.err == nil && sr.sum.ETag != etag {
		// Hashed before the file changed and the download started over:
		// ask about the version that came.
		sr = c.checksum(ctx, e.Path)
	}
	if sr.err != nil {
		return nil, sr.err
	}
	sum := sr.sum
	if sum.ETag != etag || sum.Size != size {
		_ = os.Remove(part)
		o.Resumes.drop(key)
		return nil, fmt.Errorf(":%s changed in the container during the download; run the command again", e.Path)
	}
	if err := out.Sync(); err != nil {
		return nil, err
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != sum.SHA256 {
		_ = os.Remove(part)
		o.Resumes.drop(key)
		return nil, fmt.Errorf("the downloaded bytes hash to %s, the container's file to %s: the copy is discarded; run the command again", got, sum.SHA256)
	}
	if m, err := strconv.ParseUint(e.Mode, 8, 32); err == nil {
		_ = out.Chmod(fs.FileMode(m).Perm())
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(part, local); err != nil {
		return nil, err
	}
	o.Resumes.drop(key)
	res.SHA256 = got
	return res, nil
}

// fetchRange GETs the file from have on (If-Range etag, so a changed file
// comes whole and the copy restarts) into out, and into h, which holds the
// hash of what out holds. It answers how far out now
// reaches, the ETag of the bytes in it and the file's size (-1 when no
// answer told it); a broken body returns the error with the bytes that
// did arrive counted.
func (c *Client) fetchRange(ctx context.Context, p, etag string, have int64, out *os.File, h hash.Hash, pr Progress) (int64, string, int64, error) {
	req, err := c.NewRequest(ctx, http.MethodGet, "files", "/api/v1/files/content", url.Values{"path": {p}}, nil)
	if err != nil {
		return have, etag, -1, err
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
		req.Header.Set("If-Range", etag)
	}
	resp, err := c.Send(req)
	if err != nil {
		return have, etag, -1, err
	}
	defer resp.Body.Close()
	var total int64
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, size, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			return have, etag, -1, fmt.Errorf("agent %s: answered range %q to a request from byte %d", c.base, resp.Header.Get("Content-Range"), have)
		}
		total = size
	case http.StatusOK:
		have = 0
		etag = resp.Header.Get("ETag")
		total = resp.ContentLength
		if err := out.Truncate(0); err != nil {
			return 0, etag, total, err
		}
		h.Reset()
		pr.Set(0)
	default:
		return have, etag, -1, ErrorOf(resp)
	}
	if _, err := out.Seek(have, io.SeekStart); err != nil {
		return have, etag, total, err
	}
	n, err := io.Copy(io.MultiWriter(out, h), &countingReader{r: resp.Body, pos: have, p: pr})
	have += n
	if err == nil && total < 0 {
		total = have // no length was announced: the end of the body is the end
	}
	if err == nil && have != total {
		err = fmt.Errorf("agent %s: the answer ended at byte %d of %d", c.base, have, total)
	}
	return have, etag, total, err
}

type checksumResult struct {
	sum Checksum
	err error
}

func (c *Client) checksum(ctx context.Context, p string) checksumResult {
	var r checksumResult
	r.err = c.JSON(ctx, http.MethodGet, "files", "/api/v1/files/checksum", url.Values{"path": {p}}, nil, &r.sum)
	return r
}

// contentRange parses "bytes a-b/size".
func contentRange(h string) (start, size int64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(spec, "/")
	a, _, found2 := strings.Cut(rng, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	size, err2 := strconv.ParseInt(sz, 10, 64)
	return start, size, err1 == nil && err2 == nil
}

type countingReader struct {
	r   io.Reader
	pos int64
	p   Progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.pos += int64(n)
	if n > 0 {
		c.p.Set(c.pos)
	}
	return n, err
}

func hashFile(f *os.File) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func backoff(fails int) time.Duration {
	d := 200 * time.Millisecond << min(fails, 4)
	return min(d, 3*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Resumes remembers unfinished transfers in a private file, so the same
// command run again continues where the last run stopped. A nil *Resumes
// remembers nothing.
type Resumes struct {
	Path string
	mu   sync.Mutex
}

type resume struct {
	Kind     string    `json:"kind"`
	Agent    string    `json:"agent"`
	Remote   string    `json:"remote"`
	Local    string    `json:"local"`
	UploadID string    `json:"upload_id,omitempty"`
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256,omitempty"`
	ModTime  time.Time `json:"mtime,omitzero"`
	ETag     string    `json:"etag,omitempty"`
	Updated  time.Time `json:"updated"`
}

// resumeMaxAge drops entries nobody came back for; the files service
// forgets abandoned uploads too.
const resumeMaxAge = 30 * 24 * time.Hour

func resumeKey(kind, agent, remote, local string) string {
	return kind + " " + agent + " :" + remote + " " + local
}

func (r *Resumes) load() map[string]resume {
	all := map[string]resume{}
	if err := privfile.Read(r.Path, &all); err != nil {
		return map[string]resume{}
	}
	return all
}

func (r *Resumes) get(key string) (resume, bool) {
	if r == nil {
		return resume{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.load()[key]
	return e, ok
}

// put and drop keep going when the file cannot be written: the cost is a
// transfer that starts over next time.
func (r *Resumes) put(key string, e resume) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.load()
	now := time.Now().UTC()
	for k, v := range all {
		if now.Sub(v.Updated) > resumeMaxAge {
			delete(all, k)
		}
	}
	e.Updated = now
	all[key] = e
	_ = privfile.Write(r.Path, all)
}

func (r *Resumes) drop(key string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.load()
	if _, ok := all[key]; !ok {
		return
	}
	delete(all, key)
	_ = privfile.Write(r.Path, all)
}
