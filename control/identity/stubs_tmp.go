package identity

import (
	"time"

	"deckhand/platform"
)

type launchRec struct{ ExpiresAt time.Time }

func (s *Service) oauthRoutes() []platform.Route { return nil }
