package catalog_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"deckhand/control/catalog"
	"deckhand/platform/fault"
)

func TestIDs(t *testing.T) {
	id := catalog.NewID("img_")
	if err := catalog.CheckID("image", "img_", id); err != nil || id == catalog.NewID("img_") {
		t.Fatalf("%s: %v", id, err)
	}
	for _, bad := range []string{"", "img_", "srv_" + id[4:], id + "0", id[:27] + "G", "img_../../../../../../etc/pas"} {
		var pe *fault.Error
		if err := catalog.CheckID("image", "img_", bad); !errors.As(err, &pe) || pe.Field != "id" || pe.Code != fault.CodeInvalid {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestPage(t *testing.T) {
	p := catalog.Page{}
	if err := p.Validate(); err != nil || p.Page != 1 || p.Limit != 20 || p.SortOrder != "desc" || p.Offset() != 0 {
		t.Fatalf("defaults %+v %v", p, err)
	}
	p = catalog.Page{Page: 3, Limit: 100, SortOrder: "asc"}
	if err := p.Validate(); err != nil || p.Offset() != 200 || fmt.Sprint(p.Paginate(201)) != "{201 3 100 3}" || fmt.Sprint(p.Paginate(0)) != "{0 3 100 0}" {
		t.Fatalf("%+v %v %v", p, err, p.Paginate(201))
	}
	for _, c := range []struct {
		p     catalog.Page
		field string
	}{{catalog.Page{Page: -1}, "page"}, {catalog.Page{Limit: 101}, "limit"}, {catalog.Page{Limit: -1}, "limit"}, {catalog.Page{SortOrder: "up"}, "sort_order"}} {
		var pe *fault.Error
		if err := c.p.Validate(); !errors.As(err, &pe) || pe.Field != c.field {
			t.Errorf("%+v: %v, want %s", c.p, err, c.field)
		}
	}
}

func TestErrors(t *testing.T) {
	var pe *fault.Error
	nf := fault.NotFound("image", "x")
	fault.RegisterCode("CATALOGTEST_POOR", http.StatusBadRequest)
	err := catalog.ChargeErr(&fault.Error{Code: "CATALOGTEST_POOR", Message: "insufficient balance"})
	if !errors.As(err, &pe) || pe.Code != fault.CodeBadRequest || pe.Message != "insufficient balance" {
		t.Fatalf("charge: %v", err)
	}
	if err := catalog.ChargeErr(nf); err != error(nf) {
		t.Fatalf("a 404 passes: %v", err)
	}
}
