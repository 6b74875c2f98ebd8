package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"

	"deckhand/agent/cli/privfile"
)

// cp moves files between this machine and the container with the SDK's
// resumable, checksummed transfers (sdk/go: Container.Upload and
// DownloadWith), and adds what a command run again needs to go on where
// the last run stopped:
//
//   - an upload remembers its id in the transfers file (Resumes) and a
//     later run of the same copy resumes it at the offset the service
//     holds;
//   - a download writes <dest>.deckhand-part, remembers the file's ETag,
//     and a later run asks for the rest only (If-Range on that ETag); the
//     part is renamed into place once the service's SHA-256 agrees.

// PartSuffix is appended to a download's destination while it is partial.
const PartSuffix = ".deckhand-part"

// copyResult describes a finished copy (what `cp -o json` prints).
type copyResult struct {
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

// copyOptions tune a copy.
type copyOptions struct {
	Progress *bar     // nil: nothing is shown
	Resumes  *resumes // nil: nothing is remembered across runs
	// Retries is how many drops in a row (without progress between them)
	// a copy survives.
	Retries int
	// NoClobber refuses to replace an existing destination (cp -n).
	NoClobber bool
}

// target is where a file named name goes when it is copied to remote:
// into remote when remote ends in / or is a directory in the container,
// else remote itself.
func target(ctx context.Context, box *deckhand.Container, remote, name string) (string, error) {
	if remote == "" {
		return "", errors.New("the container path is empty")
	}
	if strings.HasSuffix(remote, "/") {
		return path.Join(remote, name), nil
	}
	e, err := box.Files.Stat(ctx, remote)
	switch {
	case err == nil && e.Type == "dir":
		return path.Join(remote, name), nil
	case err == nil || deckhand.IsNotFound(err):
		return remote, nil
	}
	return "", err
}

// upload copies the local file to remote in the container of the agent
// at agent.
func upload(ctx context.Context, box *deckhand.Container, agent, local, remote string, o copyOptions) (*copyResult, error) {
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
	if remote, err = target(ctx, box, remote, filepath.Base(local)); err != nil {
		return nil, err
	}
	// The service checks this hash before it puts the file in place.
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, fi.Size())); err != nil {
		return nil, fmt.Errorf("%s: %w", local, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	abs, _ := filepath.Abs(local)
	key := resumeKey("upload", agent, remote, abs)
	rec := resume{Kind: "upload", Agent: agent, Remote: remote, Local: abs, Size: fi.Size(), SHA256: sum, ModTime: fi.ModTime()}
	var resumeID string
	if r, ok := o.Resumes.get(key); ok && r.Size == fi.Size() && r.SHA256 == sum && r.ModTime.Equal(fi.ModTime()) {
		resumeID = r.UploadID
	}
	var done int64
	o.Progress.Start(filepath.Base(local), fi.Size(), 0)
	t, err := box.Upload(ctx, remote, io.NewSectionReader(f, 0, fi.Size()), fi.Size(), deckhand.UploadOptions{
		NoOverwrite: o.NoClobber, Mode: fmt.Sprintf("%04o", fi.Mode().Perm()), SHA256: sum, Resume: resumeID, Retries: o.Retries,
		Started: func(id string) {
			if id != rec.UploadID {
				rec.UploadID = id
				o.Resumes.put(key, rec)
			}
		},
		Progress: func(n, _ int64) { done = n; o.Progress.Set(n) },
	})
	o.Progress.Finish()
	if err != nil {
		var e *deckhand.Error
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("upload interrupted at byte %d of %d; run the same command again to resume", done, fi.Size())
		case errors.As(err, &e) && e.Status != http.StatusConflict && e.Status < 500, errors.Is(err, deckhand.ErrChecksum):
			// The service refused the upload (hash, permission, too
			// large): it is over, not interrupted.
			o.Resumes.drop(key)
			return nil, explainAgent(agent, err)
		}
		return nil, fmt.Errorf("%w; run the same command again to resume", explainAgent(agent, err))
	}
	o.Resumes.drop(key)
	return &copyResult{Direction: "upload", Source: local, Destination: ":" + t.Path, Size: t.Size, SHA256: t.SHA256,
		ResumedFrom: t.ResumedFrom, Reconnects: t.Reconnects}, nil
}

// download copies remote from the container to local. A local that ends
// in / or is a directory gets the remote file's name.
func download(ctx context.Context, box *deckhand.Container, agent, remote, local string, o copyOptions) (*copyResult, error) {
	e, err := box.Files.Stat(ctx, remote)
	if err != nil {
		return nil, explainAgent(agent, err)
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
	key := resumeKey("download", agent, e.Path, abs)
	var have int64
	if r, ok := o.Resumes.get(key); ok && r.ETag == e.ETag {
		if fi, err := os.Stat(part); err == nil && fi.Size() <= e.Size {
			have = fi.Size()
		}
	}
	if have == 0 {
		_ = os.Remove(part)
	}
	o.Resumes.put(key, resume{Kind: "download", Agent: agent, Remote: e.Path, Local: abs, ETag: e.ETag, Size: e.Size})
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	resumedFrom := have
	o.Progress.Start(path.Base(e.Path), e.Size, have)
	var t *deckhand.Transfer
	for {
		if err := out.Truncate(have); err != nil {
			return nil, err
		}
		if _, err := out.Seek(have, io.SeekStart); err != nil {
			return nil, err
		}
		t, err = box.DownloadWith(ctx, e.Path, out, deckhand.DownloadOptions{From: have, ETag: e.ETag,
			Have: io.NewSectionReader(out, 0, have), Retries: o.Retries, Progress: func(n, _ int64) { have = n; o.Progress.Set(n) }})
		if errors.Is(err, deckhand.ErrChanged) && resumedFrom > 0 && have == resumedFrom {
			// The file changed since the run this one resumes: start over.
			have, resumedFrom = 0, 0
			o.Progress.Set(0)
			continue
		}
		break
	}
	o.Progress.Finish()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("download interrupted at byte %d of %d; run the same command again to resume", have, e.Size)
		case errors.Is(err, deckhand.ErrChanged):
			_ = os.Remove(part)
			o.Resumes.drop(key)
			return nil, fmt.Errorf(":%s changed in the container during the download; run the command again", e.Path)
		case errors.Is(err, deckhand.ErrChecksum):
			_ = os.Remove(part)
			o.Resumes.drop(key)
			return nil, fmt.Errorf("%w: the copy is discarded; run the command again", err)
		}
		var ae *deckhand.Error
		if errors.As(err, &ae) && ae.Status < 500 {
			return nil, explainAgent(agent, err)
		}
		return nil, fmt.Errorf("%w; run the same command again to resume", explainAgent(agent, err))
	}
	if err := out.Sync(); err != nil {
		return nil, err
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
	return &copyResult{Direction: "download", Source: ":" + e.Path, Destination: local, Size: t.Size, SHA256: t.SHA256,
		ResumedFrom: resumedFrom, Reconnects: t.Reconnects}, nil
}

// agentError is a container service's error answer as the CLI shows it.
type agentError struct{ e *deckhand.Error }

func (e agentError) Error() string {
	if e.e.Code == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.e.Message, e.e.Status)
	}
	return fmt.Sprintf("%s (%s)", e.e.Message, e.e.Code)
}

func (e agentError) Unwrap() error { return e.e }

// explainAgent words an error of the SDK's container handle for the
// command line, saying what to do next where the error does not.
func explainAgent(agent string, err error) error {
	var (
		e  *deckhand.Error
		ue *url.Error
	)
	switch {
	case err == nil, errors.As(err, new(agentError)), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &e):
		if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
			return fmt.Errorf("%w: give a token the agent admits (--token or DECKHAND_TOKEN), or reach it with --container ID after deckhand login", agentError{e})
		}
		return agentError{e}
	case errors.As(err, &ue):
		return fmt.Errorf("cannot reach the agent at %s: %w (check --agent or %s, or use --container ID)", agent, ue.Err, AgentEnv)
	}
	return err
}

// resumes remembers unfinished transfers in a private file, so the same
// command run again continues where the last run stopped. A nil *resumes
// remembers nothing.
type resumes struct {
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

func (r *resumes) load() map[string]resume {
	all := map[string]resume{}
	if err := privfile.Read(r.Path, &all); err != nil {
		return map[string]resume{}
	}
	return all
}

func (r *resumes) get(key string) (resume, bool) {
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
func (r *resumes) put(key string, e resume) {
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

func (r *resumes) drop(key string) {
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
