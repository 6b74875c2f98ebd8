package images

import (
	"context"

	"deckhand/control/catalog"
	"deckhand/control/domain"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// resolve is the engine reference of image id for the caller of ctx, the
// rule containers are made by: a free image is anyone's to run; a priced
// one only its buyers' (it is in their library) and admins'. Errors name
// image_id: 400 for a malformed or unknown id, 403 for a priced image the
// caller has not bought, 400 for a record without an engine reference.
func (s *Service) resolve(ctx context.Context, id string) (string, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return "", err
	}
	if catalog.CheckID("image", idPrefix, id) != nil {
		return "", fault.Invalid("image_id", "must be an image id: %s followed by 24 lower-case hex digits", idPrefix)
	}
	return domain.Transact(ctx, s.env.Store.ViewContext, "resolve the image", func(tx *store.Tx) (string, error) {
		var r imageRec
		ok, err := tx.Get(bucketImages, id, &r)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fault.Invalid("image_id", "no image of the catalog has id %s", id)
		}
		if r.Price > 0 && !p.IsAdmin() && tx.GetRaw(bucketOwned, ownedKey(p.UserID, id)) == nil {
			return "", &fault.Error{Code: fault.CodeForbidden, Field: "image_id", Details: "image_id",
				Message: "image_id: image " + id + " is priced and not in your library: purchase it first (POST /api/v1/images/purchase/" + id + ")"}
		}
		if r.ImageName == "" {
			return "", fault.Invalid("image_id", "image %s has no image_name the engine could run", id)
		}
		return r.ImageName, nil
	})
}

// info is what the warm pool of containers needs of image id, for no
// caller in particular (the pool fills in the background; the admin route
// that sizes it checked the admin): its engine reference and its
// prespawn mark. ok is false when no image has the id.
func (s *Service) info(ctx context.Context, id string) (domain.ImageInfo, bool, error) {
	if catalog.CheckID("image", idPrefix, id) != nil {
		return domain.ImageInfo{}, false, nil
	}
	var r imageRec
	var ok bool
	err := s.env.Store.ViewContext(ctx, func(tx *store.Tx) (err error) {
		ok, err = tx.Get(bucketImages, id, &r)
		return err
	})
	if err != nil || !ok {
		return domain.ImageInfo{}, false, err
	}
	return domain.ImageInfo{Name: r.ImageName, Prespawn: r.Prespawn}, true, nil
}
