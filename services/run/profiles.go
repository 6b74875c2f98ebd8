package run

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/store"
)

const (
	bucketProfiles = "profiles"
	bucketMeta     = "meta"
	keyActive      = "active_profile"
)

var (
	namePattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	envPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Profile is a named command environment.
type Profile struct {
	Name        string            `json:"name" required:"true"`
	Description string            `json:"description"`
	Shell       string            `json:"shell" doc:"absolute path of the shell commands run with"`
	Env         map[string]string `json:"env" doc:"variables added to the agent's environment less its own settings (DECKHAND_* are never passed on)"`
	Cwd         string            `json:"cwd" doc:"absolute working directory"`
	Path        []string          `json:"path" doc:"directories put before $PATH, in order"`
	Active      bool              `json:"active" required:"true"`
	Version     int64             `json:"version" required:"true"`
	CreatedAt   time.Time         `json:"created_at" required:"true"`
	UpdatedAt   time.Time         `json:"updated_at" required:"true"`
}

// ProfileList is the answer of GET /api/v1/run/profiles.
type ProfileList struct {
	Active   string    `json:"active" doc:"name of the active profile, empty when none"`
	Profiles []Profile `json:"profiles" required:"true"`
}

// CreateProfile is the body of POST /api/v1/run/profiles.
type CreateProfile struct {
	Name        string            `json:"name" required:"true"`
	Description string            `json:"description"`
	Shell       string            `json:"shell"`
	Env         map[string]string `json:"env"`
	Cwd         string            `json:"cwd"`
	Path        []string          `json:"path"`
}

// Validate checks every field.
func (r *CreateProfile) Validate() error {
	if !namePattern.MatchString(r.Name) {
		return fault.Invalid("name", "required: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return validateEnvFields(&r.Description, &r.Shell, r.Env, &r.Cwd, r.Path)
}

// PatchProfile is the body of PATCH /api/v1/run/profiles/{profile}: the
// fields given replace the profile's; env entries with a null value are
// removed.
type PatchProfile struct {
	Description *string            `json:"description"`
	Shell       *string            `json:"shell"`
	Env         map[string]*string `json:"env" doc:"merged into the profile's env; null removes a variable"`
	Cwd         *string            `json:"cwd"`
	Path        *[]string          `json:"path"`
}

// Validate checks the given fields.
func (r *PatchProfile) Validate() error {
	env := map[string]string{}
	for k, v := range r.Env {
		if v != nil {
			env[k] = *v
		} else if !envPattern.MatchString(k) {
			return fault.Invalid("env", "variable names are letters, digits and '_', not starting with a digit; got %q", k)
		}
	}
	var path []string
	if r.Path != nil {
		path = *r.Path
	}
	return validateEnvFields(r.Description, r.Shell, env, r.Cwd, path)
}

func validateEnvFields(desc, shell *string, env map[string]string, cwd *string, path []string) error {
	if desc != nil && len(*desc) > 1024 {
		return fault.Invalid("description", "at most 1024 bytes")
	}
	if shell != nil && *shell != "" && (!filepath.IsAbs(*shell) || strings.ContainsRune(*shell, 0)) {
		return fault.Invalid("shell", "must be an absolute path, got %q", *shell)
	}
	if len(env) > 256 {
		return fault.Invalid("env", "at most 256 variables")
	}
	for k, v := range env {
		if !envPattern.MatchString(k) {
			return fault.Invalid("env", "variable names are letters, digits and '_', not starting with a digit; got %q", k)
		}
		if strings.ContainsRune(v, 0) || len(v) > 32<<10 {
			return fault.Invalid("env", "value of %s must be at most 32 KiB without NUL", k)
		}
	}
	if cwd != nil && *cwd != "" && (!filepath.IsAbs(*cwd) || strings.ContainsRune(*cwd, 0)) {
		return fault.Invalid("cwd", "must be an absolute path, got %q", *cwd)
	}
	if len(path) > 64 {
		return fault.Invalid("path", "at most 64 directories")
	}
	for i, p := range path {
		if !filepath.IsAbs(p) || strings.ContainsAny(p, ":\x00") {
			return fault.Invalid("path["+strconv.Itoa(i)+"]", "must be an absolute directory without ':', got %q", p)
		}
	}
	return nil
}

// ifMatch reads an If-Match version ("" = none given).
func ifMatch(raw string) (int64, bool, error) {
	raw = strings.Trim(strings.TrimPrefix(strings.TrimSpace(raw), "W/"), `"`)
	if raw == "" || raw == "*" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 {
		return 0, false, fault.Invalid("If-Match", "must be a version number, got %q", raw)
	}
	return n, true, nil
}

func conflict(kind, id string, have, want int64) error {
	return &fault.Error{Code: fault.CodeConflict, Details: "If-Match",
		Message: kind + " " + strconv.Quote(id) + " is at version " + strconv.FormatInt(have, 10) + ", not " + strconv.FormatInt(want, 10)}
}

// load reads one record or answers 404 naming its kind.
func load(tx *store.Tx, bucket, kind, id string, v any) error {
	ok, err := tx.Get(bucket, id, v)
	if err != nil {
		return err
	}
	if !ok {
		return fault.NotFound(kind, id)
	}
	return nil
}

func (s *Service) active(tx *store.Tx) string {
	var a string
	_, _ = tx.Get(bucketMeta, keyActive, &a)
	return a
}

// Profiles lists profiles by name.
func (s *Service) Profiles() (ProfileList, error) {
	out := ProfileList{Profiles: []Profile{}}
	err := s.deps.Store.View(func(tx *store.Tx) error {
		out.Active = s.active(tx)
		ps, _, err := store.All[Profile](tx, profileTable, store.Query{})
		for _, p := range ps {
			p.Active = p.Name == out.Active
			out.Profiles = append(out.Profiles, p)
		}
		return err
	})
	return out, err
}

// CreateProfile adds a profile; 409 when the name is taken.
func (s *Service) CreateProfile(r CreateProfile) (Profile, error) {
	now := s.deps.Clock.Now().UTC()
	p := Profile{Name: r.Name, Description: r.Description, Shell: r.Shell, Env: r.Env, Cwd: r.Cwd, Path: r.Path,
		Version: 1, CreatedAt: now, UpdatedAt: now}
	normalize(&p)
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		var old Profile
		if ok, err := tx.Get(bucketProfiles, p.Name, &old); err != nil {
			return err
		} else if ok {
			return &fault.Error{Code: fault.CodeConflict, Details: "name", Message: "name: profile " + strconv.Quote(p.Name) + " already exists"}
		}
		if s.active(tx) == "" {
			if err := tx.Put(bucketMeta, keyActive, p.Name); err != nil {
				return err
			}
			p.Active = true
		}
		return tx.Put(bucketProfiles, p.Name, p)
	})
	return p, err
}

func normalize(p *Profile) {
	if p.Env == nil {
		p.Env = map[string]string{}
	}
	if p.Path == nil {
		p.Path = []string{}
	}
}

// PatchProfile changes a profile; version is the If-Match (0 = none).
func (s *Service) PatchProfile(name string, version int64, r PatchProfile) (Profile, error) {
	var p Profile
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		if err := load(tx, bucketProfiles, "profile", name, &p); err != nil {
			return err
		}
		if version != 0 && version != p.Version {
			return conflict("profile", name, p.Version, version)
		}
		setIf(&p.Description, r.Description)
		setIf(&p.Shell, r.Shell)
		setIf(&p.Cwd, r.Cwd)
		setIf(&p.Path, r.Path)
		normalize(&p)
		for k, v := range r.Env {
			if v == nil {
				delete(p.Env, k)
			} else {
				p.Env[k] = *v
			}
		}
		if len(p.Env) > 256 {
			return fault.Invalid("env", "at most 256 variables")
		}
		p.Version++
		p.UpdatedAt = s.deps.Clock.Now().UTC()
		p.Active = s.active(tx) == name
		return tx.Put(bucketProfiles, name, p)
	})
	return p, err
}

// DeleteProfile removes a profile (and the active mark when it had it).
func (s *Service) DeleteProfile(name string) error {
	return s.deps.Store.Update(func(tx *store.Tx) error {
		var p Profile
		if err := load(tx, bucketProfiles, "profile", name, &p); err != nil {
			return err
		}
		if s.active(tx) == name {
			if err := tx.Delete(bucketMeta, keyActive); err != nil {
				return err
			}
		}
		return tx.Delete(bucketProfiles, name)
	})
}

// SelectProfile makes a profile the active one.
func (s *Service) SelectProfile(name string) (Profile, error) {
	var p Profile
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		if err := load(tx, bucketProfiles, "profile", name, &p); err != nil {
			return err
		}
		p.Active = true
		return tx.Put(bucketMeta, keyActive, name)
	})
	return p, err
}

// setIf applies one field of a PATCH body: a field the body names (non-nil)
// replaces the stored value, an absent one leaves it.
func setIf[T any](dst *T, patch *T) {
	if patch != nil {
		*dst = *patch
	}
}
