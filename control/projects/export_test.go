package projects

import (
	"context"

	"deckhand/platform/proxyperm"
)

// PutContainerGroup is the group PUT of a container document, for tests
// that race writers without HTTP.
func (s *Service) PutContainerGroup(ctx context.Context, id string, want int64, name string, g proxyperm.Group) (*proxyperm.Document, error) {
	return s.writeDoc(ctx, docScope{}, id, want, putGroup(name, g))
}
