package domain

import (
	"context"

	"deckhand/platform/fault"
)

// Images is where the images domain tells other domains what an image of
// the catalog runs as, without them reading its buckets: the projects
// domain resolves a container's image_id to the engine's reference.
type Images struct {
	resolve seam[func(ctx context.Context, imageID string) (string, error)]
	info    seam[func(ctx context.Context, imageID string) (ImageInfo, bool, error)]
}

// Provide registers the catalog's resolver: the engine reference
// (image_name) of imageID for the caller of ctx, or a *fault.Error
// naming image_id (unknown image, an image the caller may not use).
func (i *Images) Provide(resolve func(ctx context.Context, imageID string) (string, error)) {
	i.resolve.provide(resolve, "images")
}

// Resolve is the engine reference of imageID for the caller of ctx; 400
// naming image_id when no domain provides a catalog.
func (i *Images) Resolve(ctx context.Context, imageID string) (string, error) {
	if i == nil || i.resolve.get() == nil {
		return "", fault.Invalid("image_id", "this control plane has no image catalog")
	}
	return i.resolve.get()(ctx, imageID)
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
	i.info.provide(info, "image info")
}

// Info is imageID's ImageInfo (ok false: no such image, or no catalog).
func (i *Images) Info(ctx context.Context, imageID string) (ImageInfo, bool, error) {
	if i == nil || i.info.get() == nil {
		return ImageInfo{}, false, nil
	}
	return i.info.get()(ctx, imageID)
}
