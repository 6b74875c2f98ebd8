package images

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/catalog"
	"deckhand/platform"
	"deckhand/platform/store"
)

// ListInput is the public list's query. Nil bounds are absent.
type ListInput struct {
	OS, Architecture     string
	MinPrice, MaxPrice   *float64
	MinRating, MaxRating *float64
	Search               string
	SortBy, SortOrder    string
	Page, Limit          int
}

// Validate checks each field and the ranges' order.
func (in *ListInput) Validate() error {
	pg := catalog.Page{SortOrder: in.SortOrder, Page: in.Page, Limit: in.Limit}
	if err := pg.Validate(); err != nil {
		return err
	}
	in.SortOrder, in.Page, in.Limit = pg.SortOrder, pg.Page, pg.Limit
	if in.SortBy == "" {
		in.SortBy = "added_date"
	}
	switch {
	case !slices.Contains(sortKeys, in.SortBy):
		return platform.Invalid("sort_by", "must be one of alias, added_date, price, rating")
	case utf8.RuneCountInString(in.Search) > 200:
		return platform.Invalid("search", "must be at most 200 characters")
	case strings.ContainsAny(in.Search, "\x1e\x1f"):
		return platform.Invalid("search", "must not contain control characters")
	}
	for _, b := range []struct {
		name string
		v    *float64
		max  float64
	}{{"min_price", in.MinPrice, 1e15}, {"max_price", in.MaxPrice, 1e15}, {"min_rating", in.MinRating, 5}, {"max_rating", in.MaxRating, 5}} {
		if b.v != nil && (math.IsNaN(*b.v) || *b.v < 0 || *b.v > b.max) {
			return platform.Invalid(b.name, "must be a number at least 0 and at most %g", b.max)
		}
	}
	if in.MinPrice != nil && in.MaxPrice != nil && *in.MinPrice > *in.MaxPrice {
		return platform.Invalid("min_price", "must not be greater than max_price")
	}
	if in.MinRating != nil && in.MaxRating != nil && *in.MinRating > *in.MaxRating {
		return platform.Invalid("min_rating", "must not be greater than max_rating")
	}
	return nil
}

// filter turns the bounds into the index's units: a lower bound rounds up
// to the next cent (hundredth), an upper bound down.
func (in *ListInput) filter() *filter {
	f := &filter{maxPrice: -1, maxRate: 500, os: strings.ToLower(in.OS), arch: strings.ToLower(in.Architecture),
		search: strings.ToLower(in.Search)}
	up := func(v float64) int64 { return int64(math.Ceil(v*100 - 1e-6)) }
	down := func(v float64) int64 { return int64(math.Floor(v*100 + 1e-6)) }
	if in.MinPrice != nil {
		f.minPrice = up(*in.MinPrice)
	}
	if in.MaxPrice != nil {
		f.maxPrice = down(*in.MaxPrice)
	}
	if in.MinRating != nil {
		f.minRate = up(*in.MinRating)
	}
	if in.MaxRating != nil {
		f.maxRate = down(*in.MaxRating)
	}
	return f
}

// PublicList is the public list's data.
type PublicList struct {
	Images     []Image    `json:"images"`
	Pagination Pagination `json:"pagination"`
}

// List is the public catalog filtered, sorted and paged.
func (s *Service) List(ctx context.Context, in ListInput) (*PublicList, error) {
	if _, err := platform.Caller(ctx); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	out := &PublicList{Images: []Image{}}
	err := s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		snap, err := s.list.at(tx)
		if err != nil {
			return err
		}
		total, entries := snap.page(in.SortBy, in.SortOrder == "desc", in.filter(), (in.Page-1)*in.Limit, in.Limit)
		out.Pagination = (&catalog.Page{Page: in.Page, Limit: in.Limit}).Paginate(total)
		for _, e := range entries {
			r, err := e.record(tx)
			if err != nil {
				return err
			}
			out.Images = append(out.Images, r.public())
		}
		return nil
	})
	if err != nil {
		return nil, platform.Wrap("list images", err)
	}
	return out, nil
}

func (s *Service) handleList(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	pg := catalog.PageOf(q)
	in := ListInput{OS: q.String("os"), Architecture: q.String("architecture"), Search: q.String("search"),
		SortBy: q.String("sort_by"), SortOrder: pg.SortOrder, Page: pg.Page, Limit: pg.Limit}
	for name, dst := range map[string]**float64{"min_price": &in.MinPrice, "max_price": &in.MaxPrice, "min_rating": &in.MinRating, "max_rating": &in.MaxRating} {
		if q.Has(name) {
			v := q.Float(name)
			*dst = &v
		}
	}
	out, err := s.List(c.Context(), in)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Images", out)
}

// Get is one public image with its serial.
func (s *Service) Get(ctx context.Context, id string) (*Image, error) {
	if _, err := platform.Caller(ctx); err != nil {
		return nil, err
	}
	var img Image
	err := s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		r, err := load(tx, id)
		if err != nil {
			return err
		}
		img = r.public()
		img.Serial = r.Serial
		return nil
	})
	if err != nil {
		return nil, platform.Wrap("read the image", err)
	}
	return &img, nil
}

func (s *Service) handleGet(c fiber.Ctx) error {
	img, err := s.Get(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Image", img)
}
