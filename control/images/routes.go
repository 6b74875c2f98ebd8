package images

import (
	"net/http"
	"time"

	"deckhand/platform"
	"deckhand/platform/ratelimit"
)

// Routes is the domain's route table.
func (s *Service) Routes() []platform.Route {
	tag := []string{"images"}
	// Writes a person makes by hand; the limits stop scripted floods.
	perMinute := func(name string, n int) []ratelimit.RateLimit {
		return []ratelimit.RateLimit{{Name: name, By: ratelimit.ByAccount, N: n, Per: time.Minute}}
	}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/images/public", OperationID: "listPublicImages", Policy: platform.SignedIn, Tags: tag,
			Summary: "Public image catalog",
			Description: "Filters combine with AND. The list needs a credential like every control-plane route that the interface does not name public. " +
				"min_price > max_price or min_rating > max_rating is 400. Ties within a sort key are ordered by image id.",
			Message: "Images", Op: platform.Op(s.List)},
		{Method: http.MethodGet, Path: "/api/v1/images/public/{id}", OperationID: "getPublicImage", Policy: platform.SignedIn, Tags: tag,
			Summary: "One public image, with serial", Message: "Image", Op: platform.Op(s.Get)},
		{Method: http.MethodGet, Path: "/api/v1/images/{id}/icon", OperationID: "getImageIcon", Policy: platform.SignedIn, Tags: tag,
			Summary: "The image's icon (PNG)", ContentType: "image/png",
			Description: "The uploaded PNG, or a deterministic generated 64x64 PNG when none was uploaded.", Op: platform.Op(s.IconPNG)},
		{Method: http.MethodGet, Path: "/api/v1/images/user", OperationID: "listMyImages", Policy: platform.SignedIn, Tags: tag,
			Summary: "The caller's library (imported and purchased images)", Message: "Your images", Op: platform.Op(s.Library)},
		{Method: http.MethodPost, Path: "/api/v1/images/import/{id}", OperationID: "importImage", Policy: platform.SignedIn, Tags: tag, Limits: perMinute("images.import", 60),
			Summary:     "Import a free image into the caller's library",
			Description: "data is an empty object. 400 when the image is not free or already in the caller's library; 404 when unknown.",
			Message:     "Image imported", Op: platform.Op(s.Import)},
		{Method: http.MethodPost, Path: "/api/v1/images/purchase/{id}", OperationID: "purchaseImage", Policy: platform.SignedIn, Tags: tag, Limits: perMinute("images.purchase", 60),
			Summary: "Buy an image with the wallet's general balance",
			Description: "The debit, its wallet transaction (type image_purchase) and the ownership commit together. " +
				"400 on insufficient balance, when already owned, or when the image is free (import it instead); 404 when unknown.",
			Message: "Image purchased", Op: platform.Op(s.Purchase)},
		{Method: http.MethodPost, Path: "/api/v1/images/rate/{id}", OperationID: "rateImage", Policy: platform.SignedIn, Tags: tag, Limits: perMinute("images.rate", 60),
			Summary:     "Rate an image 0-5 (one rating per user; a new one replaces the old)",
			Description: "Any signed-in user may rate an existing image. Ratings take at most 2 decimals.", Message: "Image rated", Op: platform.Op(s.Rate)},
		{Method: http.MethodPost, Path: "/api/v1/admin/images", OperationID: "createImage", Policy: platform.Admin, Tags: tag, Status: http.StatusCreated,
			Summary:     "Publish an image (admin)",
			Description: "alias is unique (case-insensitive): 409 when taken. icon_png_b64 is an optional base64 PNG (at most 256 KiB, 1024x1024).",
			Message:     "Image created", Op: platform.Op(s.Create)},
	}
}
