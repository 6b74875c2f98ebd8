package images

import (
	"context"
	"fmt"
	"math"

	"deckhand/control/catalog"
	"deckhand/control/domain"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// ownership is one image in one user's library.
type ownership struct {
	ImageID   string       `json:"image_id"`
	UserID    string       `json:"user_id"`
	Acquired  string       `json:"acquired"` // import or purchase
	PricePaid money.Amount `json:"price_paid"`
	CreatedNs int64        `json:"created_ns"`
	CreatedAt string       `json:"created_at"`
}

func ownedKey(user, image string) string { return user + "/" + image }

// own records that user owns r; it answers 400 when the image is already
// in the user's library.
func (s *Service) own(tx *store.Tx, user string, r *imageRec, how string, paid money.Amount) error {
	var o ownership
	if ok, err := tx.Get(bucketOwned, ownedKey(user, r.ID), &o); err != nil {
		return err
	} else if ok {
		if o.Acquired == "import" {
			return fault.Errorf(fault.CodeBadRequest, "image %s is already imported", r.ID)
		}
		return fault.Errorf(fault.CodeBadRequest, "image %s is already owned", r.ID)
	}
	now := s.env.Clock.Now().UTC()
	o = ownership{ImageID: r.ID, UserID: user, Acquired: how, PricePaid: paid, CreatedNs: now.UnixNano(),
		CreatedAt: now.Format("2006-01-02T15:04:05.000Z")}
	return tx.Put(bucketOwned, ownedKey(user, r.ID), o)
}

// Imported is the data of an import: an empty object.
type Imported struct{}

// Import adds a free image to the caller's library, once.
func (s *Service) Import(ctx context.Context, ref ImageRef) (Imported, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return Imported{}, err
	}
	return domain.Transact(ctx, s.env.Store.UpdateContext, "import the image", func(tx *store.Tx) (Imported, error) {
		r, err := load(tx, ref.ID)
		if err != nil {
			return Imported{}, err
		}
		if r.Price != 0 {
			return Imported{}, fault.Errorf(fault.CodeBadRequest, "image %s is not free (price %s): purchase it", ref.ID, r.Price)
		}
		return Imported{}, s.own(tx, p.UserID, r, "import", 0)
	})
}

// PurchaseResult is what a purchase answers.
type PurchaseResult struct {
	PricePaid        money.Number `json:"price_paid"`
	RemainingBalance money.Number `json:"remaining_balance"`
}

// Purchase buys a priced image with the caller's general balance: the
// wallet's debit and the ownership record commit in one transaction.
func (s *Service) Purchase(ctx context.Context, ref ImageRef) (*PurchaseResult, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.env.Store.UpdateContext, "purchase the image", func(tx *store.Tx) (*PurchaseResult, error) {
		r, err := load(tx, ref.ID)
		if err != nil {
			return nil, err
		}
		if r.Price == 0 {
			return nil, fault.Errorf(fault.CodeBadRequest, "image %s is free: import it instead", ref.ID)
		}
		if err := s.own(tx, p.UserID, r, "purchase", r.Price); err != nil {
			return nil, err
		}
		left, err := s.env.Payments.Charge(tx, domain.Charge{UserID: p.UserID, Amount: r.Price, Kind: "image_purchase",
			Reference: r.ID, Description: "Image " + r.Alias})
		if err != nil {
			return nil, catalog.ChargeErr(err)
		}
		res := &PurchaseResult{PricePaid: money.Number(r.Price), RemainingBalance: money.Number(left)}
		return res, s.event(tx, ctx, p, "image.purchased", r.ID, map[string]any{"price": r.Price})
	})
}

// RateInput is the rate body.
type RateInput struct {
	Rating *float64 `json:"rating" required:"true" doc:"number 0 to 5 with at most 2 decimals"`

	hundredths int64
}

// RateRequest is POST /api/v1/images/rate/{id}.
type RateRequest struct {
	ImageRef
	Body RateInput
}

// Validate checks the rating's presence and range.
func (in *RateInput) Validate() error {
	if in.Rating == nil {
		return fault.Invalid("rating", "is required")
	}
	f := *in.Rating
	if math.IsNaN(f) || f < 0 || f > 5 {
		return fault.Invalid("rating", "must be a number from 0 to 5")
	}
	h := math.Round(f * 100)
	if math.Abs(h-f*100) > 1e-6 {
		return fault.Invalid("rating", "must have at most 2 decimals")
	}
	in.hundredths = int64(h)
	return nil
}

// RateResult is what a rating answers.
type RateResult struct {
	NewRating     float64 `json:"new_rating"`
	AverageRating float64 `json:"average_rating"`
	RatingCount   int     `json:"rating_count"`
}

func ratingKey(image, user string) string { return image + "/" + user }

// Rate records the caller's rating of an image, replacing an earlier one,
// and updates the image's average (and with it the rating index).
func (s *Service) Rate(ctx context.Context, req RateRequest) (*RateResult, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	id, in := req.ID, req.Body
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.env.Store.UpdateContext, "rate the image", func(tx *store.Tx) (*RateResult, error) {
		r, err := load(tx, id)
		if err != nil {
			return nil, err
		}
		var prev int64
		if ok, err := tx.Get(bucketRatings, ratingKey(id, p.UserID), &prev); err != nil {
			return nil, err
		} else if ok {
			r.RatingSum -= prev
		} else {
			r.RatingCount++
		}
		r.RatingSum += in.hundredths
		if err := tx.Put(bucketRatings, ratingKey(id, p.UserID), in.hundredths); err != nil {
			return nil, err
		}
		res := &RateResult{NewRating: hundredths(in.hundredths), AverageRating: hundredths(r.average()), RatingCount: r.RatingCount}
		return res, tx.Put(bucketImages, id, r)
	})
}

// LibraryInput is the library's query (newest first by default).
type LibraryInput struct {
	SortBy string `query:"sort_by" enum:"created_at" default:"created_at" doc:"when the image entered the library (the only order)"`
	catalog.Page
}

// UserList is the library's data.
type UserList struct {
	Images     []LibraryImage    `json:"images"`
	Pagination domain.Pagination `json:"pagination"`
}

// Library is the caller's images, newest first unless sort_order is asc.
func (s *Service) Library(ctx context.Context, in LibraryInput) (*UserList, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.env.Store.ViewContext, "list your images", func(tx *store.Tx) (*UserList, error) {
		pg, err := store.PageOf[ownership](tx, ownedTable, store.Query{Filters: []store.Filter{store.Where("user_id", store.Eq, p.UserID)},
			Sort: []string{"created_ns"}, Desc: in.SortOrder == "desc", Offset: in.Offset(), Limit: in.Limit})
		if err != nil {
			return nil, err
		}
		out := &UserList{Images: []LibraryImage{}, Pagination: in.Paginate(pg.Total)}
		// The page's records and ratings: one multi-get each.
		owns := pg.Items
		ids, rated := make([]string, len(owns)), make([]string, len(owns))
		for i, o := range owns {
			ids[i], rated[i] = o.ImageID, ratingKey(o.ImageID, p.UserID)
		}
		recs, err := store.GetMany[imageRec](tx, bucketImages, ids)
		if err != nil {
			return nil, err
		}
		ratings, err := store.GetMany[int64](tx, bucketRatings, rated)
		if err != nil {
			return nil, err
		}
		for i, id := range ids {
			r, o := recs[i], owns[i]
			if r == nil {
				// A library entry without its records is never written so:
				// an internal error rather than a silently short page.
				return nil, fmt.Errorf("library entry without its image records: %s", id)
			}
			var mine int64
			if ratings[i] != nil {
				mine = *ratings[i]
			}
			out.Images = append(out.Images, LibraryImage{Fields: r.fields(), UserRating: hundredths(mine), HasRated: ratings[i] != nil,
				Acquired: o.Acquired, PricePaid: money.Number(o.PricePaid), CreatedAt: o.CreatedAt})
		}
		return out, nil
	})
}
