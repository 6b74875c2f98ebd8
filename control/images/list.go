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
		pg, err := store.PageOf[imageRec](tx, imageTable, store.Query{Filters: in.filters(), Sort: []string{in.SortBy},
			Desc: in.SortOrder == "desc", Offset: (in.Page - 1) * in.Limit, Limit: in.Limit})
		if err != nil {
			return err
		}
		out.Pagination = (&catalog.Page{Page: in.Page, Limit: in.Limit}).Paginate(pg.Total)
		for i := range pg.Items {
			out.Images = append(out.Images, pg.Items[i].public())
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
