// Package images owns the control plane's image catalog: the image records
// admins publish, the public listing (filters, search, sort, pagination)
// served from sort indexes kept in the same transaction as the records,
// icons (uploaded PNGs or a generated default), each user's library
// (imported free images and purchased ones) and ratings, one per user.
//
// Purchases charge the wallet through the Payments seam (domain.Payments)
// inside the same store transaction as the ownership record, so a purchase
// is paid and owned, or neither.
package images

import (
	"context"
	"fmt"

	"deckhand/control/catalog"
	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Buckets. Index buckets hold one entry per image, keyed by the sort value
// then the id, valued with the image's filter fields (see index.go).
const (
	bucketImages  = "images"
	bucketIcons   = "image_icons"
	bucketAliases = "image_aliases" // lower-case alias → id
	bucketOwned   = "image_owned"   // user/image → ownership
	bucketRatings = "image_ratings" // image/user → rating (hundredths)
)

// Service is the images domain.
type Service struct {
	env domain.Env[domain.NoConfig]
}

// New builds the domain. It needs the wallet's Payer for purchases: the
// server refuses to start when no domain provides one.
func New(env domain.Env[domain.NoConfig]) (*Service, error) {
	env.Payments.Require()
	if err := env.Store.DeclareReplacing(context.Background(), Tables, legacyBuckets...); err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	s := &Service{env: env}
	if env.Images != nil {
		env.Images.Provide(s.resolve)
		env.Images.ProvideInfo(s.info)
	}
	return s, nil
}

// Fields are what every image record shows (docs/spec/interface.md, Image record).
type Fields struct {
	ID            string       `json:"id"`
	Alias         string       `json:"alias"`
	Description   string       `json:"description"`
	ImageName     string       `json:"image_name"`
	Architecture  string       `json:"architecture"`
	OS            string       `json:"os"`
	Release       string       `json:"release"`
	Variant       string       `json:"variant"`
	Size          int64        `json:"size"`
	Price         money.Number `json:"price"`
	AverageRating float64      `json:"average_rating"`
	RatingCount   int          `json:"rating_count"`
	IconURL       string       `json:"icon_url"`
	Prespawn      bool         `json:"prespawn"`
	Tags          []string     `json:"tags"`
}

// Image is the public image record; Serial is set only on the single-image
// answer.
type Image struct {
	Fields
	AddedDate string `json:"added_date"`
	Serial    string `json:"serial,omitempty"`
}

// LibraryImage is an image of the caller's library: the public record
// without added_date, with the caller's rating.
type LibraryImage struct {
	Fields
	UserRating float64 `json:"user_rating"`
	HasRated   bool    `json:"has_rated"`
	// Acquired is how the image came into the library: import or purchase.
	Acquired  string       `json:"acquired"`
	PricePaid money.Number `json:"price_paid"`
	CreatedAt string       `json:"created_at"`
}

// imageRec is the stored image.
type imageRec struct {
	ID           string       `json:"id"`
	Alias        string       `json:"alias"`
	Description  string       `json:"description"`
	ImageName    string       `json:"image_name"`
	Architecture string       `json:"architecture"`
	OS           string       `json:"os"`
	Release      string       `json:"release"`
	Variant      string       `json:"variant"`
	Size         int64        `json:"size"`
	Price        money.Amount `json:"price"`
	Prespawn     bool         `json:"prespawn"`
	Tags         []string     `json:"tags"`
	Serial       string       `json:"serial"`
	AddedNanos   int64        `json:"added_ns"`
	AddedDate    string       `json:"added_date"`
	// RatingSum is the sum of every user's rating in hundredths.
	RatingSum   int64 `json:"rating_sum"`
	RatingCount int   `json:"rating_count"`
	HasIcon     bool  `json:"has_icon"`
}

// average is the mean rating in hundredths, rounded half up.
func (r *imageRec) average() int64 {
	if r.RatingCount == 0 {
		return 0
	}
	n := int64(r.RatingCount)
	return (r.RatingSum*2 + n) / (2 * n)
}

func (r *imageRec) fields() Fields {
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	return Fields{ID: r.ID, Alias: r.Alias, Description: r.Description, ImageName: r.ImageName,
		Architecture: r.Architecture, OS: r.OS, Release: r.Release, Variant: r.Variant, Size: r.Size,
		Price: money.Number(r.Price), AverageRating: hundredths(r.average()),
		RatingCount: r.RatingCount, IconURL: IconPath(r.ID), Prespawn: r.Prespawn, Tags: tags}
}

func (r *imageRec) public() Image { return Image{Fields: r.fields(), AddedDate: r.AddedDate} }

// IconPath is the icon endpoint of an image (icon_url).
func IconPath(id string) string { return "/api/v1/images/" + id + "/icon" }

func hundredths(n int64) float64 { return float64(n) / 100 }

// Image ids are "img_" and 24 lower-case hex digits.
const idPrefix = "img_"

// load reads one image or answers 404.
func load(tx *store.Tx, id string) (*imageRec, error) {
	if err := catalog.CheckID("image", idPrefix, id); err != nil {
		return nil, err
	}
	var r imageRec
	ok, err := tx.Get(bucketImages, id, &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFound("image", id)
	}
	return &r, nil
}

func (s *Service) event(tx *store.Tx, ctx context.Context, p *auth.Principal, kind, id string, payload any) error {
	_, err := s.env.Events.Append(tx, events.Event{EventType: kind, ResourceType: "image", ResourceID: id,
		ActorID: p.UserID, IP: auth.ClientIP(ctx), Payload: events.Payload(payload)})
	return err
}
