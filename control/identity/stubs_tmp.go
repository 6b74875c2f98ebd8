package identity

import (
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

type launchRec struct{ ExpiresAt time.Time }

func (s *Service) twoFactorRoutes() []platform.Route            { return nil }
func (s *Service) oauthRoutes() []platform.Route                { return nil }
func (s *Service) checkTokenGate(c fiber.Ctx, uid string) error { return nil }
