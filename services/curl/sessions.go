package curl

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/atomicfile"
	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
)

var idPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

const masked = "********"

// Session is one cookie jar.
type Session struct {
	ID         string    `json:"id" required:"true"`
	Path       string    `json:"path" required:"true" doc:"the jar file: curl -b PATH -c PATH"`
	Cookies    int       `json:"cookies" required:"true" doc:"number of cookies in the jar"`
	Expired    int       `json:"expired" required:"true" doc:"how many of them are past their expiry"`
	Domains    []string  `json:"domains" required:"true"`
	Size       int64     `json:"size" required:"true"`
	ModifiedAt time.Time `json:"modified_at" required:"true"`
}

// SessionList is the answer of GET /api/v1/curl/sessions.
type SessionList struct {
	Dir      string    `json:"dir" required:"true"`
	Sessions []Session `json:"sessions" required:"true"`
}

// Cookie is one cookie of a jar as the API shows it.
type Cookie struct {
	Domain            string     `json:"domain" required:"true"`
	IncludeSubdomains bool       `json:"include_subdomains" required:"true"`
	Path              string     `json:"path" required:"true"`
	Name              string     `json:"name" required:"true"`
	Value             string     `json:"value" required:"true" doc:"\"********\" unless reveal=true"`
	Masked            bool       `json:"masked" required:"true"`
	Expires           *time.Time `json:"expires" doc:"null for a session cookie"`
	Expired           bool       `json:"expired" required:"true"`
	Secure            bool       `json:"secure" required:"true"`
	HTTPOnly          bool       `json:"http_only" required:"true"`
}

// CookieList is the answer of GET .../sessions/{id}/cookies.
type CookieList struct {
	Session string   `json:"session" required:"true"`
	Cookies []Cookie `json:"cookies" required:"true"`
}

// NewCookie is one cookie to add.
type NewCookie struct {
	Domain            string `json:"domain" required:"true"`
	IncludeSubdomains bool   `json:"include_subdomains"`
	Path              string `json:"path" doc:"default /"`
	Name              string `json:"name" required:"true"`
	Value             string `json:"value"`
	Expires           string `json:"expires" doc:"RFC 3339 time; absent or empty: a session cookie"`
	Secure            bool   `json:"secure"`
	HTTPOnly          bool   `json:"http_only"`

	expires int64
}

// AddCookies is the body of POST .../sessions/{id}/cookies.
type AddCookies struct {
	Cookies []NewCookie `json:"cookies" required:"true"`
}

// Validate checks every cookie.
func (r *AddCookies) Validate() error {
	if len(r.Cookies) == 0 {
		return fault.Invalid("cookies", "required: at least one cookie")
	}
	if len(r.Cookies) > 1000 {
		return fault.Invalid("cookies", "at most 1000 cookies")
	}
	for i := range r.Cookies {
		c := &r.Cookies[i]
		f := "cookies[" + strconv.Itoa(i) + "]."
		c.Path = cmp.Or(c.Path, "/")
		d := strings.TrimPrefix(c.Domain, ".")
		switch {
		case d == "" || strings.ContainsAny(c.Domain, " \t\r\n;,/#") || len(c.Domain) > 253:
			return fault.Invalid(f+"domain", "required: a host name")
		case !strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, "\t\r\n;"):
			return fault.Invalid(f+"path", "must start with / and hold no tab, newline or ';'")
		case c.Name == "" || strings.ContainsAny(c.Name, " \t\r\n;=,") || len(c.Name) > 4096:
			return fault.Invalid(f+"name", "required: a cookie name without spaces, tabs, newlines, ';', ',' or '='")
		case strings.ContainsAny(c.Value, "\t\r\n;") || len(c.Value) > 4096:
			return fault.Invalid(f+"value", "at most 4096 bytes without tab, newline or ';'")
		}
		if c.Expires != "" {
			t, err := time.Parse(time.RFC3339, c.Expires)
			if err != nil || t.Unix() < 1 {
				return fault.Invalid(f+"expires", "must be an RFC 3339 time (2030-01-02T15:04:05Z), got %q", c.Expires)
			}
			c.expires = t.Unix()
		}
	}
	return nil
}

func checkID(id string) error {
	if !idPattern.MatchString(id) {
		return fault.Invalid("id", "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return nil
}

func (s *Service) path(id string) string { return filepath.Join(s.dir, id+".txt") }

// read parses a session's jar.
func (s *Service) read(id string) ([]cookie, os.FileInfo, error) {
	if err := checkID(id); err != nil {
		return nil, nil, fault.NotFound("session", id)
	}
	f, err := os.Open(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fault.NotFound("session", id)
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	cs, err := parseJar(f)
	if err != nil {
		return nil, nil, &fault.Error{Code: fault.CodeConflict, Details: "jar",
			Message: "session " + strconv.Quote(id) + " is not a Netscape cookie file: " + err.Error()}
	}
	return cs, st, nil
}

func (s *Service) summary(id string, cs []cookie, st os.FileInfo) Session {
	now := s.deps.Clock.Now()
	out := Session{ID: id, Path: s.path(id), Cookies: len(cs), Size: st.Size(), ModifiedAt: st.ModTime().UTC(), Domains: []string{}}
	seen := map[string]bool{}
	for _, c := range cs {
		if c.expired(now) {
			out.Expired++
		}
		if !seen[c.Domain] {
			seen[c.Domain] = true
			out.Domains = append(out.Domains, c.Domain)
		}
	}
	sort.Strings(out.Domains)
	return out
}

// SessionRef names a cookie session.
type SessionRef struct {
	ID string `path:"id" doc:"the session: 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"`
}

// CookieQuery is GET /api/v1/curl/sessions/{id}/cookies.
type CookieQuery struct {
	SessionRef
	Reveal bool `query:"reveal" default:"false" doc:"answer the values"`
}

// CookieAdd is POST /api/v1/curl/sessions/{id}/cookies.
type CookieAdd struct {
	SessionRef
	Body AddCookies
}

// SessionAnswer is a session after cookies were added: 201 when the jar
// is new, 200 otherwise.
type SessionAnswer struct {
	Status int
	Body   Session
}

// Sessions lists the jars by id. A file that is not a jar is left out.
func (s *Service) Sessions(context.Context) (SessionList, error) {
	out := SessionList{Dir: s.dir, Sessions: []Session{}}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return out, err
	}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".txt")
		if !ok || !e.Type().IsRegular() || checkID(id) != nil {
			continue
		}
		cs, st, err := s.read(id)
		if err != nil {
			continue
		}
		out.Sessions = append(out.Sessions, s.summary(id, cs, st))
	}
	return out, nil
}

// Session reads one session's summary.
func (s *Service) Session(_ context.Context, ref SessionRef) (Session, error) {
	id := ref.ID
	cs, st, err := s.read(id)
	if err != nil {
		return Session{}, err
	}
	return s.summary(id, cs, st), nil
}

// Delete removes a session's jar.
func (s *Service) Delete(_ context.Context, ref SessionRef) error {
	id := ref.ID
	if err := checkID(id); err != nil {
		return fault.NotFound("session", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return fault.NotFound("session", id)
	}
	return err
}

// Cookies lists a session's cookies, values masked unless q.Reveal.
func (s *Service) Cookies(_ context.Context, q CookieQuery) (CookieList, error) {
	id, reveal := q.ID, q.Reveal
	cs, _, err := s.read(id)
	if err != nil {
		return CookieList{}, err
	}
	now := s.deps.Clock.Now()
	out := CookieList{Session: id, Cookies: make([]Cookie, 0, len(cs))}
	for _, c := range cs {
		v := Cookie{Domain: c.Domain, IncludeSubdomains: c.IncludeSubdomains, Path: c.Path, Name: c.Name, Value: masked,
			Masked: true, Expired: c.expired(now), Secure: c.Secure, HTTPOnly: c.HTTPOnly}
		if reveal {
			v.Value, v.Masked = c.Value, false
		}
		if c.Expires != 0 {
			t := time.Unix(c.Expires, 0).UTC()
			v.Expires = &t
		}
		out.Cookies = append(out.Cookies, v)
	}
	return out, nil
}

// AddCookies adds or replaces cookies in a jar, creating it (then 201).
func (s *Service) AddCookies(_ context.Context, in CookieAdd) (SessionAnswer, error) {
	sess, created, err := s.addCookies(in.ID, in.Body)
	if err != nil {
		return SessionAnswer{}, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return SessionAnswer{Status: status, Body: sess}, nil
}

func (s *Service) addCookies(id string, r AddCookies) (sess Session, created bool, err error) {
	if err := checkID(id); err != nil {
		return Session{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, _, err := s.read(id)
	var pe *fault.Error
	if errors.As(err, &pe) && pe.Code == fault.CodeNotFound {
		created, err = true, nil
	}
	if err != nil {
		return Session{}, false, err
	}
	for _, n := range r.Cookies {
		c := cookie{Domain: n.Domain, IncludeSubdomains: n.IncludeSubdomains, Path: n.Path, Secure: n.Secure,
			Name: n.Name, Value: n.Value, HTTPOnly: n.HTTPOnly}
		if n.IncludeSubdomains && !strings.HasPrefix(c.Domain, ".") {
			c.Domain = "." + c.Domain
		}
		c.Expires = n.expires
		replaced := false
		for i := range cs {
			if strings.TrimPrefix(cs[i].Domain, ".") == strings.TrimPrefix(c.Domain, ".") && cs[i].Path == c.Path && cs[i].Name == c.Name {
				cs[i], replaced = c, true
			}
		}
		if !replaced {
			cs = append(cs, c)
		}
	}
	if err := atomicfile.Write(s.path(id), formatJar(cs), 0o600); err != nil {
		return Session{}, false, err
	}
	st, err := os.Stat(s.path(id))
	if err != nil {
		return Session{}, false, err
	}
	s.log.Info("cookie session written", "session", id, "cookies", len(r.Cookies))
	return s.summary(id, cs, st), created, nil
}
