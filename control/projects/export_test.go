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

// ContainerDocument is the container document as people read it.
func (s *Service) ContainerDocument(ctx context.Context, id string) (*proxyperm.Document, error) {
	return s.GetDocument(ctx, docScope{}, id)
}

// ReplaceContainerDocument is the whole-document PUT of a container.
func (s *Service) ReplaceContainerDocument(ctx context.Context, id string, want int64, d *proxyperm.Document) (*proxyperm.Document, error) {
	m, err := replaceDoc(d)
	if err != nil {
		return nil, err
	}
	return s.writeDoc(ctx, docScope{}, id, want, m)
}
