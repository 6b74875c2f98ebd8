// Package files owns the container's file service: the REST file API over
// one confined root (--files-root) and the version endpoint. Paths in the
// API are absolute within the root ("/notes/a.txt"); every access goes
// through an os.Root, so neither ".." nor a symbolic link leads outside it.
package files

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"deckhand/platform"
)

// APIVersion is the version of the file service's HTTP API, reported as
// `version` by GET /api/v1/version next to the build's `server_version`.
const APIVersion = "v1"

// Settings are the file service's flags.
type Settings struct {
	// Root is the directory the API serves; nothing outside it is reachable.
	Root string
}

// Flags declares --files-root.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Root, "files-root", "/", "directory the file service serves; nothing outside it is reachable")
}

// Validate checks that the root is a directory.
func (s *Settings) Validate() error {
	st, err := os.Stat(s.Root)
	if err != nil {
		return fmt.Errorf("--files-root %s: %w", s.Root, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--files-root %s: not a directory", s.Root)
	}
	return nil
}

// Service is the file service.
type Service struct {
	deps platform.ServiceDeps
	root *os.Root
}

// New builds the file service over its root.
func New(deps platform.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = &Settings{Root: "/"}
	}
	root, err := os.OpenRoot(set.Root)
	if err != nil {
		return nil, fmt.Errorf("--files-root %s: %w", set.Root, err)
	}
	return &Service{deps: deps, root: root}, nil
}

// Close releases the root.
func (s *Service) Close() error { return s.root.Close() }

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "files",
		Title:   "deckhand file service",
		Version: platform.Version,
		Description: "Files of the container over REST, confined to --files-root (paths are absolute within it; " +
			"\"..\" and symbolic links never lead outside). Query parameters follow one grammar on every service: " +
			"booleans are true, false, 1 or 0; a parameter that breaks its rule answers 400 INVALID naming it. " +
			"Errors are {\"code\",\"details\",\"message\"}.",
	}
}

// Routes is the file service's route table.
func (s *Service) Routes() []platform.Route {
	pathParam := platform.Param{Name: "path", Required: true, Description: "absolute path within the root, e.g. /notes/a.txt"}
	tags := []string{"files"}
	return []platform.Route{
		{Method: "GET", Path: "/api/v1/version", Summary: "Server and API version",
			Description: "server_version is the deckhand build (the same string `deckhand version` prints); " +
				"version is the file API version (" + APIVersion + "), which changes only when this API changes incompatibly.",
			Tags: []string{"meta"}, Policy: platform.Public, Response: Version{}, Handler: s.version},
		{Method: "GET", Path: "/api/v1/files", Tags: tags, Summary: "List a directory",
			Description: "Entries sorted by name. Names starting with a dot are left out unless hidden=true.",
			Query: []platform.Param{pathParam,
				{Name: "hidden", Type: "boolean", Default: "false", Description: "include names starting with a dot"},
				{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: 10000}, Default: "1000", Description: "at most this many entries"}},
			Response: Listing{}, Handler: s.handleList},
		{Method: "GET", Path: "/api/v1/files/content", Tags: tags, Summary: "Read a file",
			ContentType: "application/octet-stream", Query: []platform.Param{pathParam}, Handler: s.handleRead},
		{Method: "PUT", Path: "/api/v1/files/content", Tags: tags, Summary: "Write a file",
			Description: "The request body becomes the file's content (parent directories are created). " +
				"201 when the file is new, 200 when it was replaced; with overwrite=false an existing file answers 409 CONFLICT.",
			Query: []platform.Param{pathParam,
				{Name: "overwrite", Type: "boolean", Default: "true", Description: "replace an existing file"}},
			Response: Entry{}, Status: 201, Handler: s.handleWrite},
	}
}
