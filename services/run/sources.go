package run

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

const bucketSources = "sources"

// Source types.
const (
	TypeGit     = "git"
	TypeArchive = "archive"
)

// Sync states.
const (
	StateNever   = "never"
	StateSyncing = "syncing"
	StateOK      = "ok"
	StateError   = "error"
)

// Source is a package source synced into the workspace.
type Source struct {
	ID        string    `json:"id" required:"true"`
	Name      string    `json:"name" required:"true"`
	Type      string    `json:"type" required:"true" enum:"git,archive"`
	URL       string    `json:"url" required:"true"`
	Ref       string    `json:"ref" doc:"git: branch, tag or commit to fetch (empty: the remote HEAD)"`
	Dir       string    `json:"dir" required:"true" doc:"directory under the workspace, relative"`
	Path      string    `json:"path" required:"true" doc:"absolute directory the source is synced into"`
	Version   int64     `json:"version" required:"true"`
	CreatedAt time.Time `json:"created_at" required:"true"`
	UpdatedAt time.Time `json:"updated_at" required:"true"`
	Sync      SyncInfo  `json:"sync" required:"true"`
}

// SyncInfo is what the last sync did (the diagnostics' summary).
type SyncInfo struct {
	State         string     `json:"state" required:"true" enum:"never,syncing,ok,error"`
	LastError     string     `json:"last_error,omitempty"`
	LastAttemptAt *time.Time `json:"last_attempt_at"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	DurationMS    int64      `json:"duration_ms" required:"true" doc:"duration of the last attempt"`
	Revision      string     `json:"revision,omitempty" doc:"git: commit checked out; archive: sha256 of the download"`
	Steps         []Step     `json:"steps" required:"true" doc:"timings of the last attempt's steps"`
	Attempts      int64      `json:"attempts" required:"true"`
	Failures      int64      `json:"failures" required:"true"`
}

// Step is one timed step of a sync.
type Step struct {
	Name       string `json:"name" required:"true"`
	DurationMS int64  `json:"duration_ms" required:"true"`
	Error      string `json:"error,omitempty"`
}

// Diagnostics is the answer of GET .../sources/{source_id}/diagnostics.
type Diagnostics struct {
	SourceID string   `json:"source_id" required:"true"`
	Type     string   `json:"type" required:"true"`
	URL      string   `json:"url" required:"true"`
	Path     string   `json:"path" required:"true"`
	Exists   bool     `json:"exists" required:"true" doc:"the synced directory exists"`
	Syncing  bool     `json:"syncing" required:"true"`
	Tool     string   `json:"tool,omitempty" doc:"git --version when type is git"`
	Sync     SyncInfo `json:"sync" required:"true"`
}

// SourceList is the answer of GET /api/v1/run/sources.
type SourceList struct {
	Workspace string   `json:"workspace" required:"true"`
	Sources   []Source `json:"sources" required:"true"`
}

// SyncAll is the answer of POST /api/v1/run/sources/sync.
type SyncAll struct {
	OK      int      `json:"ok" required:"true"`
	Failed  int      `json:"failed" required:"true"`
	Sources []Source `json:"sources" required:"true"`
}

// CreateSource is the body of POST /api/v1/run/sources.
type CreateSource struct {
	Name string `json:"name" required:"true"`
	Type string `json:"type" required:"true" enum:"git,archive"`
	URL  string `json:"url" required:"true"`
	Ref  string `json:"ref"`
	Dir  string `json:"dir" doc:"default: the name"`
}

// Validate checks every field.
func (r *CreateSource) Validate() error {
	if !namePattern.MatchString(r.Name) {
		return fault.Invalid("name", "required: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if r.Type != TypeGit && r.Type != TypeArchive {
		return fault.Invalid("type", "must be git or archive, got %q", r.Type)
	}
	r.Dir = cmp.Or(r.Dir, r.Name)
	return validateSource(r.Type, r.URL, r.Ref, r.Dir)
}

// PatchSource is the body of PATCH .../sources/{source_id}.
type PatchSource struct {
	Name *string `json:"name"`
	URL  *string `json:"url"`
	Ref  *string `json:"ref"`
	Dir  *string `json:"dir"`
}

// Validate checks the name; the rest is checked against the source.
func (r *PatchSource) Validate() error {
	if r.Name != nil && !namePattern.MatchString(*r.Name) {
		return fault.Invalid("name", "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return nil
}

var refPattern = namePatternRef()

func namePatternRef() func(string) bool {
	return func(ref string) bool {
		if ref == "" {
			return true
		}
		if len(ref) > 255 || strings.HasPrefix(ref, "-") || strings.Contains(ref, "..") {
			return false
		}
		for _, c := range ref {
			if c <= ' ' || c == 0x7f || strings.ContainsRune("~^:?*[\\", c) {
				return false
			}
		}
		return true
	}
}

func validateSource(typ, raw, ref, dir string) error {
	if raw == "" {
		return fault.Invalid("url", "required")
	}
	if len(raw) > 4096 || strings.ContainsAny(raw, "\x00\n\r") || strings.HasPrefix(raw, "-") {
		return fault.Invalid("url", "must not start with '-' or hold control characters")
	}
	switch typ {
	case TypeGit:
		if strings.Contains(raw, "::") {
			return fault.Invalid("url", "git remote helpers (<transport>::<address>) are not allowed")
		}
		if u, err := url.Parse(raw); err == nil && u.Scheme != "" && len(u.Scheme) > 1 {
			switch u.Scheme {
			case "https", "http", "ssh", "git", "file":
			default:
				return fault.Invalid("url", "scheme must be https, http, ssh, git or file, got %q", u.Scheme)
			}
		} else if !filepath.IsAbs(raw) && !strings.Contains(raw, ":") {
			return fault.Invalid("url", "must be a URL, an absolute path or user@host:path, got %q", raw)
		}
		if !refPattern(ref) {
			return fault.Invalid("ref", "must be a git branch, tag or commit name, got %q", ref)
		}
	case TypeArchive:
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fault.Invalid("url", "must be an http or https URL, got %q", raw)
		}
		if ref != "" {
			return fault.Invalid("ref", "only git sources have a ref")
		}
	}
	clean := filepath.Clean(dir)
	if dir == "" || filepath.IsAbs(dir) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") ||
		strings.ContainsRune(dir, 0) || len(dir) > 512 {
		return fault.Invalid("dir", "must be a relative directory inside the workspace, got %q", dir)
	}
	for _, part := range strings.Split(clean, "/") {
		if strings.HasPrefix(part, ".") {
			return fault.Invalid("dir", "no part may start with '.', got %q", dir)
		}
	}
	return nil
}

// checkURL refuses a URL whose host is an address a sync may not reach
// (see egress); a host name is judged again by what it resolves to when
// a sync connects.
func (s *Service) checkURL(typ, raw string) error {
	host := ""
	if typ == TypeArchive {
		if u, err := url.Parse(raw); err == nil {
			host = u.Hostname()
		}
	} else {
		host = parseGitURL(raw).host
	}
	return s.egress.checkHost(host)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "src_" + hex.EncodeToString(b[:])
}

func (s *Service) withPath(src Source) Source {
	src.Path = filepath.Join(s.workspace, filepath.Clean(src.Dir))
	if src.Sync.Steps == nil {
		src.Sync.Steps = []Step{}
	}
	return src
}

// Sources lists the sources by name.
func (s *Service) Sources() (SourceList, error) {
	out := SourceList{Workspace: s.workspace, Sources: []Source{}}
	err := s.deps.Store.View(func(tx *store.Tx) error {
		srcs, _, err := store.All[storedSource](tx, sourceTable, store.Query{Sort: []string{"name"}})
		for _, src := range srcs {
			out.Sources = append(out.Sources, s.view(src.Source))
		}
		return err
	})
	return out, err
}

// Source reads one source as the API shows it.
func (s *Service) Source(id string) (Source, error) {
	src, err := s.source(id)
	return s.view(src), err
}

// view is a source as the API shows it: credentials in its URL redacted.
func (s *Service) view(src Source) Source {
	src = s.withPath(src)
	src.URL = redactURL(src.URL)
	return src
}

// redactURL hides the password of a URL's userinfo (https://user:xxxxx@host).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// secretOf is the password in a URL's userinfo, "" when none.
func secretOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// storedSource is a source in the store: a URL with a password is kept
// redacted beside its sealed whole (platform/secrets, key
// <data>/run/secrets.key), so the store file alone never shows it.
type storedSource struct {
	Source
	SealedURL string `json:"sealed_url,omitempty"`
}

const sealPurpose = "run/source-url"

func (s *Service) putSource(tx *store.Tx, src Source) error {
	st := storedSource{Source: src}
	if secretOf(src.URL) != "" {
		sealed, err := s.sealer.Seal(sealPurpose, []byte(src.URL))
		if err != nil {
			return err
		}
		st.URL, st.SealedURL = redactURL(src.URL), sealed
	}
	return tx.Put(bucketSources, src.ID, st)
}

// getSource reads a source with its URL whole; 404 when unknown.
func (s *Service) getSource(tx *store.Tx, id string, dst *Source) error {
	var st storedSource
	if err := load(tx, bucketSources, "source", id, &st); err != nil {
		return err
	}
	if st.SealedURL != "" {
		plain, err := s.sealer.Open(sealPurpose, st.SealedURL)
		if err != nil {
			return fmt.Errorf("source %s: url: %w", id, err)
		}
		st.URL = string(plain)
	}
	*dst = st.Source
	return nil
}

// source reads one source with its URL whole.
func (s *Service) source(id string) (Source, error) {
	var src Source
	err := s.deps.Store.View(func(tx *store.Tx) error { return s.getSource(tx, id, &src) })
	return s.withPath(src), err
}

// checkUnique refuses a name or dir another source has (409): a dir
// overlaps another when one is the other or lies under it.
func checkUnique(tx *store.Tx, self Source) error {
	other := store.Where("key", store.Ne, self.ID)
	named, err := store.PageOf[storedSource](tx, sourceTable, store.Query{
		Filters: []store.Filter{store.Where("name", store.Eq, self.Name), other}, Limit: 1, SkipTotal: true})
	if err != nil {
		return err
	}
	if len(named.Items) > 0 {
		return &fault.Error{Code: fault.CodeConflict, Details: "name", Message: "name: source " + strconv.Quote(self.Name) + " already exists"}
	}
	clean := filepath.Clean(self.Dir)
	selfAndAbove := []string{clean}
	for i := 1; i < len(clean); i++ {
		if clean[i] == '/' {
			selfAndAbove = append(selfAndAbove, clean[:i])
		}
	}
	for _, fs := range [][]store.Filter{
		{store.Where("dir", store.In, selfAndAbove), other},
		{store.Where("dir", store.Gte, clean+"/"), store.Where("dir", store.Lt, clean+"0"), other}, // "0" follows "/"
	} {
		pg, err := store.PageOf[storedSource](tx, sourceTable, store.Query{Filters: fs, Limit: 1, SkipTotal: true})
		if err != nil {
			return err
		}
		if len(pg.Items) > 0 {
			return &fault.Error{Code: fault.CodeConflict, Details: "dir",
				Message: "dir: " + strconv.Quote(self.Dir) + " overlaps the dir of source " + strconv.Quote(pg.Items[0].Name)}
		}
	}
	return nil
}

// CreateSource adds a source (not synced yet).
func (s *Service) CreateSource(r CreateSource) (Source, error) {
	now := s.deps.Clock.Now().UTC()
	if err := s.checkURL(r.Type, r.URL); err != nil {
		return Source{}, err
	}
	src := Source{ID: newID(), Name: r.Name, Type: r.Type, URL: r.URL, Ref: r.Ref, Dir: filepath.Clean(r.Dir),
		Version: 1, CreatedAt: now, UpdatedAt: now, Sync: SyncInfo{State: StateNever, Steps: []Step{}}}
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		if err := checkUnique(tx, src); err != nil {
			return err
		}
		return s.putSource(tx, src)
	})
	return s.view(src), err
}

// PatchSource changes a source; version is the If-Match (0 = none). A
// changed dir leaves the old directory where it is.
func (s *Service) PatchSource(id string, version int64, r PatchSource) (Source, error) {
	var src Source
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		if err := s.getSource(tx, id, &src); err != nil {
			return err
		}
		if version != 0 && version != src.Version {
			return conflict("source", id, src.Version, version)
		}
		setIf(&src.Name, r.Name)
		setIf(&src.URL, r.URL)
		setIf(&src.Ref, r.Ref)
		setIf(&src.Dir, r.Dir)
		if err := validateSource(src.Type, src.URL, src.Ref, src.Dir); err != nil {
			return err
		}
		if err := s.checkURL(src.Type, src.URL); err != nil {
			return err
		}
		src.Dir = filepath.Clean(src.Dir)
		if err := checkUnique(tx, src); err != nil {
			return err
		}
		src.Version++
		src.UpdatedAt = s.deps.Clock.Now().UTC()
		return s.putSource(tx, src)
	})
	return s.view(src), err
}

// DeleteSource forgets a source; the synced directory stays unless
// removeFiles. 409 while the source syncs.
func (s *Service) DeleteSource(id string, removeFiles bool) error {
	s.mu.Lock()
	if s.syncing[id] {
		s.mu.Unlock()
		return &fault.Error{Code: fault.CodeConflict, Details: "source_id", Message: "source " + id + " is syncing; delete it after the sync"}
	}
	// Held as syncing while it goes, so no sync starts on it meanwhile.
	s.syncing[id] = true
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.syncing, id); s.mu.Unlock() }()
	var src Source
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		if err := s.getSource(tx, id, &src); err != nil {
			return err
		}
		return tx.Delete(bucketSources, id)
	})
	if err == nil && removeFiles {
		return removeAll(s.withPath(src).Path)
	}
	return err
}
