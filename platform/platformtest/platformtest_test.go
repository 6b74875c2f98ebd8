package platformtest_test

import (
	"fmt"
	"net/http"
	"testing"

	"deckhand/platform"
	"deckhand/platform/platformtest"

	"github.com/gofiber/fiber/v3"
)

// recorder captures failures instead of failing the real test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recorder) Fatalf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recorder) Helper()                   {}

func TestUndocumentedRouteIsCaught(t *testing.T) {
	ok := func(c fiber.Ctx) error { return c.SendString("ok") }
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "t"}}, []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/items/{id}", Summary: "item", Handler: ok},
	})
	rec := &recorder{TB: t}
	platformtest.CheckRoutesDocumented(rec, h)
	if len(rec.errs) != 0 {
		t.Fatalf("documented routes flagged: %v", rec.errs)
	}
	h.App().Post("/api/v1/sneaky", ok) // registered outside the route table
	platformtest.CheckRoutesDocumented(rec, h)
	if len(rec.errs) != 1 {
		t.Fatalf("want exactly the sneaky route flagged, got %v", rec.errs)
	}
}
