package projects

import "deckhand/platform"

func (s *Service) snapshotRoutes(operate, manage, read platform.Policy, actErrs string) []platform.Route {
	return nil
}
