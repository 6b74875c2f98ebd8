// Package files owns the container's file service: the REST file API and
// WebDAV under /dav/ over one confined root. Today it serves the version
// endpoint; the file API joins this route table in its own issue.
package files

import (
	"deckhand/platform"
)

// APIVersion is the version of the file service's HTTP API, reported as
// `version` by GET /api/v1/version next to the build's `server_version`.
const APIVersion = "v1"

// Service is the file service.
type Service struct {
	deps platform.ServiceDeps
}

// New builds the file service from what the agent hands it.
func New(deps platform.ServiceDeps) *Service {
	return &Service{deps: deps}
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:        "files",
		Title:       "deckhand file service",
		Version:     platform.Version,
		Description: "Files of the container over REST and WebDAV (/dav/). Errors are {\"code\",\"details\",\"message\"}.",
	}
}

// Routes is the file service's route table.
func (s *Service) Routes() []platform.Route {
	return []platform.Route{
		{Method: "GET", Path: "/api/v1/version", Summary: "Server and API version",
			Description: "server_version is the deckhand build (the same string `deckhand version` prints); " +
				"version is the file API version (" + APIVersion + "), which changes only when this API changes incompatibly.",
			Tags: []string{"meta"}, Public: true, Response: Version{}, Handler: s.version},
	}
}
