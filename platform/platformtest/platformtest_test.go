package platformtest_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/platformtest"
)

func TestCheckRoutesDocumented(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ok := func(c fiber.Ctx) error { return nil }
	h := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "t", Title: "t", Version: "1"}},
		[]platform.Route{
			{Method: http.MethodGet, Path: "/api/v1/things/{id}", Handler: ok},
			{Method: http.MethodGet, Path: "/api/v1/files/{path...}", Handler: ok},
			{Method: platform.MethodAny, Path: "/dav/{path...}", Handler: ok},
		})
	platformtest.CheckRoutesDocumented(t, h)

	// A route added behind the table's back must be caught.
	h.App().Get("/undocumented", ok)
	rec := &recorder{TB: t}
	platformtest.CheckRoutesDocumented(rec, h)
	if len(rec.errors) == 0 {
		t.Fatal("a served route missing from the document went unnoticed")
	}
	for _, e := range rec.errors {
		if !strings.Contains(e, "/undocumented") {
			t.Fatalf("complaint about a documented route: %q", e)
		}
	}
}

type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}
