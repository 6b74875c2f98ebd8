package domain

import (
	"context"
	"sync"

	"deckhand/platform/fault"
)

// Images is where the images domain tells other domains what an image of
// the catalog runs as, without them reading its buckets: the projects
// domain resolves a container's image_id to the engine's reference.
type Images struct {
	mu      sync.RWMutex
	resolve func(ctx context.Context, imageID string) (string, error)
	info    func(ctx context.Context, imageID string) (ImageInfo, bool, error)
}

// Provide registers the catalog's resolver: the engine reference
// (image_name) of imageID for the caller of ctx, or a *fault.Error
// naming image_id (unknown image, an image the caller may not use).
func (i *Images) Provide(resolve func(ctx context.Context, imageID string) (string, error)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.resolve != nil {
		panic("domain: images provided twice")
	}
	i.resolve = resolve
}

// Resolve is the engine reference of imageID for the caller of ctx; 400
// naming image_id when no domain provides a catalog.
func (i *Images) Resolve(ctx context.Context, imageID string) (string, error) {
	var resolve func(context.Context, string) (string, error)
	if i != nil {
		i.mu.RLock()
		resolve = i.resolve
		i.mu.RUnlock()
	}
	if resolve == nil {
		return "", fault.Invalid("image_id", "this control plane has no image catalog")
	}
	return resolve(ctx, imageID)
}

// ImageInfo is what the warm pool of containers needs of a catalog
// image, whoever asks: its engine reference and whether it is marked
// prespawn.
type ImageInfo struct {
	Name     string
	Prespawn bool
}

// ProvideInfo registers the catalog's lookup of ImageInfo: ok false when
// no image has the id.
func (i *Images) ProvideInfo(info func(ctx context.Context, imageID string) (ImageInfo, bool, error)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.info != nil {
		panic("domain: image info provided twice")
	}
	i.info = info
}

// Info is imageID's ImageInfo (ok false: no such image, or no catalog).
func (i *Images) Info(ctx context.Context, imageID string) (ImageInfo, bool, error) {
	var info func(context.Context, string) (ImageInfo, bool, error)
	if i != nil {
		i.mu.RLock()
		info = i.info
		i.mu.RUnlock()
	}
	if info == nil {
		return ImageInfo{}, false, nil
	}
	return info(ctx, imageID)
}
