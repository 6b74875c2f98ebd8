package files

import (
	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Version is the answer of GET /api/v1/version.
type Version struct {
	ServerVersion string `json:"server_version" required:"true" doc:"deckhand build version"`
	Version       string `json:"version" required:"true" doc:"file API version"`
}

func (s *Service) version(c fiber.Ctx) error {
	return platform.JSON(c, fiber.StatusOK, Version{ServerVersion: platform.Version, Version: APIVersion})
}
