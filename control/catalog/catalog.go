// Package catalog holds what the selling domains (images, servers) share:
// their id format, the mapping of store errors and of a refused charge
// onto the interface's errors, and page parameters.
package catalog

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"deckhand/control/domain"
	"deckhand/platform/fault"
)

// NewID is prefix followed by 24 random lower-case hex digits.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// CheckID refuses a path id that NewID(prefix) cannot have made with 400
// (the spec's "bad id format"), so lookups only see well-formed ids; kind
// names it in the message ("image").
func CheckID(kind, prefix, id string) error {
	ok := len(id) == len(prefix)+24 && strings.HasPrefix(id, prefix) &&
		strings.IndexFunc(id[len(prefix):], func(c rune) bool { return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') }) < 0
	if !ok {
		return fault.Invalid("id", "must be %s id: %s followed by 24 lower-case hex digits", article(kind), prefix)
	}
	return nil
}

func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// ChargeErr keeps the interface's envelope for a refused charge: whatever
// code the wallet gives a 400 (insufficient balance), a selling route
// answers error "Bad Request" with the wallet's message.
func ChargeErr(err error) error {
	var pe *fault.Error
	if errors.As(err, &pe) && pe.Status() == http.StatusBadRequest {
		c := *pe
		c.Code = fault.CodeBadRequest
		return &c
	}
	return err
}

// Page sizes (docs/spec/interface.md, Limits: image lists).
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Page is a list's page, sort order and their defaults.
type Page struct {
	SortOrder string `query:"sort_order" enum:"asc,desc" default:"desc"`
	Page      int    `query:"page" minimum:"1" maximum:"1e9" default:"1" doc:"page number, from 1"`
	Limit     int    `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"page size, 1 to 100 (default 20); a limit over 100 is refused with 400, never silently clamped"`
}

// Validate fills the defaults (page 1, limit 20, desc) and checks bounds:
// a limit over MaxLimit is refused, never clamped.
func (p *Page) Validate() error {
	p.Page = cmp.Or(p.Page, 1)
	p.Limit = cmp.Or(p.Limit, DefaultLimit)
	p.SortOrder = cmp.Or(p.SortOrder, "desc")
	switch {
	case p.Page < 1:
		return fault.Invalid("page", "must be an integer at least 1")
	case p.Limit < 1 || p.Limit > MaxLimit:
		return fault.Invalid("limit", "must be an integer at least 1 and at most %d", MaxLimit)
	case p.SortOrder != "asc" && p.SortOrder != "desc":
		return fault.Invalid("sort_order", "must be one of asc, desc")
	}
	return nil
}

// Offset is the number of entries before the page.
func (p *Page) Offset() int { return (p.Page - 1) * p.Limit }

// Paginate is the pagination of total entries seen through p.
func (p *Page) Paginate(total int) domain.Pagination {
	return domain.Paginate(total, p.Page, p.Limit)
}
