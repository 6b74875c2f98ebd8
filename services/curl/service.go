// Package curl owns cookie sessions: cookie jars in the Netscape format
// curl reads and writes (curl -b FILE -c FILE), one file per session under
// <data>/curl/jars. The service lists and reads them (values masked unless
// asked), adds cookies to them and deletes them; curl and the service share
// the same files, so a jar curl wrote is listed and one the service wrote
// is sent by curl. Cookie values are secrets: never logged, never listed.
package curl

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"deckhand/platform"
	"deckhand/platform/contract"
)

// Service is the cookie-sessions service.
type Service struct {
	deps contract.ServiceDeps
	log  *slog.Logger
	dir  string
	mu   sync.Mutex // serializes the service's own writes to jars
}

// New builds the service; its jars live in <data>/curl/jars.
func New(deps contract.ServiceDeps, _ *contract.NoSettings) (*Service, error) {
	if deps.DataDir == "" {
		return nil, errors.New("curl: no data directory")
	}
	deps = deps.WithDefaults()
	dir := filepath.Join(deps.DataDir, "jars")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Service{deps: deps, log: deps.Logger, dir: dir}, nil
}

// Dir is the directory of the jars (<data>/curl/jars).
func (s *Service) Dir() string { return s.dir }

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "curl",
		Title:   "deckhand cookie sessions",
		Version: platform.Version,
		Description: "Cookie sessions are cookie jars in the Netscape format curl reads and writes: a session {id} is the " +
			"file <data>/curl/jars/{id}.txt (its path is in every session record), so `curl -b PATH -c PATH URL` uses and " +
			"updates it, and a jar curl wrote there is a session. Session ids are 1-128 letters, digits, '.', '_' or '-' " +
			"starting with a letter or digit. Cookies list domain, include_subdomains, path, name, value, expires " +
			"(null for a session cookie), secure and http_only (the #HttpOnly_ prefix curl writes). Values are secrets: " +
			"lists and reads answer \"********\" unless the request says reveal=true, and the service never logs them. " +
			"POST .../sessions/{id}/cookies adds or replaces cookies (same domain, path and name) and creates the jar " +
			"(0600) when missing; writes are atomic (written beside and renamed). Expired cookies are listed with " +
			"expired true (curl drops them on its next write). Unknown sessions are 404; bad bodies 400 INVALID naming " +
			"the field. Errors are {\"code\",\"details\",\"message\"}.",
	}
}
