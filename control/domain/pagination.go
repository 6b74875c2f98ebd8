package domain

import "deckhand/platform"

// Pagination is data.pagination of every control-plane list
// (docs/spec/interface.md): the total, the page (from 1), its size and the number of
// pages (0 when there is nothing).
type Pagination struct {
	Total      int `json:"total"`
	Page       int `json:"page"`
	Limit      int `json:"limit"`
	TotalPages int `json:"totalPages"`
}

// Paginate is the pagination of total entries read limit at a time, at
// page. limit must be at least 1.
func Paginate(total, page, limit int) Pagination {
	return Pagination{Total: total, Page: page, Limit: limit, TotalPages: (total + limit - 1) / limit}
}

// PageQuery is the page of a list an operation's input embeds (with its
// own sort_by): the same rules as PageParam, LimitParam and SortOrderParam.
type PageQuery struct {
	Page      int    `query:"page" minimum:"1" maximum:"1e9" default:"1" doc:"page number, from 1"`
	Limit     int    `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"page size, 1 to 100 (default 20); a limit over 100 is refused with 400, never silently clamped"`
	SortOrder string `query:"sort_order" enum:"asc,desc" default:"desc"`
}

// Desc reports whether the list runs newest (largest) first.
func (q PageQuery) Desc() bool { return q.SortOrder != "asc" }

// The query parameters of a paged list, declared once for every domain's
// route table: a limit over 100 is refused with 400, never clamped.
var (
	PageParam = platform.Param{Name: "page", Type: "integer", Range: &platform.Range{Min: 1, Max: 1e9}, Default: "1",
		Description: "page number, from 1"}
	LimitParam = platform.Param{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: 100}, Default: "20",
		Description: "page size, 1 to 100 (default 20); a limit over 100 is refused with 400, never silently clamped"}
	SortOrderParam = platform.Param{Name: "sort_order", Enum: []string{"asc", "desc"}, Default: "desc"}
)
