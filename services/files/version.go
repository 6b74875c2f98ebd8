package files

import (
	"context"

	"deckhand/platform"
)

// Version is the answer of GET /api/v1/version.
type Version struct {
	ServerVersion string `json:"server_version" required:"true" doc:"deckhand build version"`
	Version       string `json:"version" required:"true" doc:"file API version"`
}

// Version answers the server's build and the file API's version.
func (s *Service) Version(context.Context) (Version, error) {
	return Version{ServerVersion: platform.Version, Version: APIVersion}, nil
}
