package cataloge2e_test

import (
	"path/filepath"
	"testing"

	"deckhand/control/controltest"
)

// On PostgreSQL two replicas serve one database: what one writes, the
// other lists at once (the in-memory list is checked against the catalog
// version in every read transaction). On the embedded store the same
// sequence runs on one server.
func TestListsAreExactAcrossReplicas(t *testing.T) {
	a := serve(t)
	b := a
	if controltest.OnPostgres() {
		data := t.TempDir()
		b = server{controltest.StartArgs(t, data, "serve", "--listen", "127.0.0.1:0", "--data", data, "--log-level", "warn",
			"--database-url", controltest.DatabaseURL(t, a.Data), "--master-key-file", filepath.Join(a.Data, "master.key"))}
	}
	adm := a.Admin()
	user, _ := a.User(adm, "reader")
	if r := b.Must(200, "GET", "/api/v1/images/public", nil, user); pagination(r) != "total=0 page=1 limit=20 pages=0" {
		t.Fatalf("empty catalog on B: %s", pagination(r))
	}
	x := data(a.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "x", "image_name": "X", "os": "linux", "architecture": "amd64"}, adm))["id"].(string)
	a.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "y", "image_name": "Y", "os": "linux", "architecture": "amd64"}, adm)
	if r := b.Must(200, "GET", "/api/v1/images/public?sort_by=alias&sort_order=asc", nil, user); aliases(r) != "x,y" {
		t.Fatalf("B after A's creates: %q", aliases(r))
	}
	b.Must(200, "POST", "/api/v1/images/rate/"+x, map[string]any{"rating": 3.5}, user)
	r := a.Must(200, "GET", "/api/v1/images/public?min_rating=3", nil, user)
	if aliases(r) != "x" || data(r)["images"].([]any)[0].(map[string]any)["average_rating"] != 3.5 {
		t.Fatalf("A after B's rating: %s", r.Raw)
	}
	b.Must(200, "POST", "/api/v1/images/rate/"+x, map[string]any{"rating": 1}, user)
	if r := a.Must(200, "GET", "/api/v1/images/public?min_rating=3", nil, user); aliases(r) != "" {
		t.Fatalf("A after B replaced the rating: %q", aliases(r))
	}
}
