package domain

// Pagination is data.pagination of every control-plane list
// (interface.md): the total, the page (from 1), its size and the number of
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
