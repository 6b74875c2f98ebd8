package images

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"deckhand/control/catalog"
	"deckhand/control/domain"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// ListInput is the public list's query. Nil bounds are absent.
type ListInput struct {
	OS           string   `query:"os" doc:"exact operating system, case-insensitive"`
	Architecture string   `query:"architecture" doc:"exact architecture (amd64, arm64, armhf ...), case-insensitive"`
	MinPrice     *float64 `query:"min_price" minimum:"0" maximum:"1e15" doc:"lowest price; 0 includes free images"`
	MaxPrice     *float64 `query:"max_price" minimum:"0" maximum:"1e15" doc:"highest price; 0 means free images only"`
	MinRating    *float64 `query:"min_rating" minimum:"0" maximum:"5" doc:"lowest average rating, 0-5"`
	MaxRating    *float64 `query:"max_rating" minimum:"0" maximum:"5" doc:"highest average rating, 0-5"`
	Search       string   `query:"search" doc:"case-insensitive substring of the alias, image name, description or a tag (at most 200 characters)"`
	SortBy       string   `query:"sort_by" enum:"alias,added_date,price,rating" default:"added_date"`
	SortOrder    string   `query:"sort_order" enum:"asc,desc" default:"desc"`
	Page         int      `query:"page" minimum:"1" maximum:"1e9" default:"1" doc:"page number, from 1"`
	Limit        int      `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"page size, 1 to 100 (default 20); a limit over 100 is refused with 400, never silently clamped"`
}

// ImageRef names one image.
type ImageRef struct {
	ID string `path:"id" doc:"an image id (img_...)"`
}

// Validate checks each field and the ranges' order.
func (in *ListInput) Validate() error {
	pg := catalog.Page{SortOrder: in.SortOrder, Page: in.Page, Limit: in.Limit}
	if err := pg.Validate(); err != nil {
		return err
	}
	in.SortOrder, in.Page, in.Limit = pg.SortOrder, pg.Page, pg.Limit
	in.SortBy = cmp.Or(in.SortBy, "added_date")
	switch {
	case !slices.Contains(sortKeys, in.SortBy):
		return fault.Invalid("sort_by", "must be one of alias, added_date, price, rating")
	case utf8.RuneCountInString(in.Search) > 200:
		return fault.Invalid("search", "must be at most 200 characters")
	case strings.ContainsAny(in.Search, "\x1e\x1f"):
		return fault.Invalid("search", "must not contain control characters")
	}
	for _, b := range []struct {
		name string
		v    *float64
		max  float64
	}{{"min_price", in.MinPrice, 1e15}, {"max_price", in.MaxPrice, 1e15}, {"min_rating", in.MinRating, 5}, {"max_rating", in.MaxRating, 5}} {
		if b.v != nil && (math.IsNaN(*b.v) || *b.v < 0 || *b.v > b.max) {
			return fault.Invalid(b.name, "must be a number at least 0 and at most %g", b.max)
		}
	}
	if in.MinPrice != nil && in.MaxPrice != nil && *in.MinPrice > *in.MaxPrice {
		return fault.Invalid("min_price", "must not be greater than max_price")
	}
	if in.MinRating != nil && in.MaxRating != nil && *in.MinRating > *in.MaxRating {
		return fault.Invalid("min_rating", "must not be greater than max_rating")
	}
	return nil
}

// filters are the list's conditions in the table's units: a lower bound
// rounds up to the next cent (hundredth), an upper bound down.
func (in *ListInput) filters() []store.Filter {
	var out []store.Filter
	if in.OS != "" {
		out = append(out, store.Where("os", store.Eq, strings.ToLower(in.OS)))
	}
	if in.Architecture != "" {
		out = append(out, store.Where("architecture", store.Eq, strings.ToLower(in.Architecture)))
	}
	up := func(v float64) int64 { return int64(math.Ceil(v*100 - 1e-6)) }
	down := func(v float64) int64 { return int64(math.Floor(v*100 + 1e-6)) }
	for _, b := range []struct {
		field string
		op    store.Op
		v     *float64
		round func(float64) int64
	}{{"price", store.Gte, in.MinPrice, up}, {"price", store.Lte, in.MaxPrice, down},
		{"rating", store.Gte, in.MinRating, up}, {"rating", store.Lte, in.MaxRating, down}} {
		if b.v != nil {
			out = append(out, store.Where(b.field, b.op, b.round(*b.v)))
		}
	}
	if in.Search != "" {
		out = append(out, store.Where("search", store.Like, "%"+likeLiteral(strings.ToLower(in.Search))+"%"))
	}
	return out
}

// PublicList is the public list's data.
type PublicList struct {
	Images     []Image           `json:"images"`
	Pagination domain.Pagination `json:"pagination"`
}

// List is the public catalog filtered, sorted and paged.
func (s *Service) List(ctx context.Context, in ListInput) (*PublicList, error) {
	if _, err := platform.Caller(ctx); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.env.Store.ViewContext, "list images", func(tx *store.Tx) (*PublicList, error) {
		pg, err := store.PageOf[imageRec](tx, imageTable, store.Query{Filters: in.filters(), Sort: []string{in.SortBy},
			Desc: in.SortOrder == "desc", Offset: (in.Page - 1) * in.Limit, Limit: in.Limit})
		if err != nil {
			return nil, err
		}
		out := &PublicList{Images: []Image{}, Pagination: (&catalog.Page{Page: in.Page, Limit: in.Limit}).Paginate(pg.Total)}
		for i := range pg.Items {
			out.Images = append(out.Images, pg.Items[i].public())
		}
		return out, nil
	})
}

// Get is one public image with its serial.
func (s *Service) Get(ctx context.Context, ref ImageRef) (*Image, error) {
	if _, err := platform.Caller(ctx); err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.env.Store.ViewContext, "read the image", func(tx *store.Tx) (*Image, error) {
		r, err := load(tx, ref.ID)
		if err != nil {
			return nil, err
		}
		return &Image{Fields: r.fields(), AddedDate: r.AddedDate, Serial: r.Serial}, nil
	})
}
