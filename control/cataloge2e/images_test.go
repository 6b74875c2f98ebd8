package cataloge2e_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestImagesAdminCreate(t *testing.T) {
	s := serve(t)
	adm := s.Admin()
	user, _ := s.User(adm, "ursula")
	good := map[string]any{"alias": "debian/12", "image_name": "Debian 12", "os": "Debian", "architecture": "amd64",
		"release": "bookworm", "variant": "cloud", "size": 1234, "price": 4.5, "prespawn": true, "serial": "20260101_01",
		"description": "Base system", "tags": []string{"stable"}}
	r := s.Must(201, "POST", "/api/v1/admin/images", good, adm)
	img := data(r)
	id, _ := img["id"].(string)
	if !strings.HasPrefix(id, "img_") || img["price"] != 4.5 || img["icon_url"] != "/api/v1/images/"+id+"/icon" ||
		img["average_rating"] != 0.0 || img["rating_count"] != 0.0 || img["prespawn"] != true || img["added_date"] == "" {
		t.Fatalf("created %s", r.Raw)
	}
	if !strings.Contains(string(r.Raw), `"price":4.50`) {
		t.Fatalf("price is not the exact number 4.50: %s", r.Raw)
	}
	wantError(t, s.Call("POST", "/api/v1/admin/images", good, adm), 409, "Conflict", "alias")
	wantError(t, s.Call("POST", "/api/v1/admin/images", good, user), 403, "Forbidden")
	wantError(t, s.Call("POST", "/api/v1/admin/images", good, ""), 401, "Unauthorized")

	bad := []struct {
		field string
		edit  map[string]any
	}{
		{"alias", map[string]any{"alias": ""}},
		{"architecture", map[string]any{"architecture": "x 86"}},
		{"price", map[string]any{"price": -1}},
		{"price", map[string]any{"price": 1.999}},
		{"size", map[string]any{"size": -5}},
		{"icon_png_b64", map[string]any{"icon_png_b64": "bm90IGEgcG5n"}},
		{"image_name", map[string]any{"image_name": nil}},
		{"average_rating", map[string]any{"average_rating": 5}},
		{"tags", map[string]any{"tags": "web"}},
	}
	for i, b := range bad {
		body := map[string]any{}
		for k, v := range good {
			body[k] = v
		}
		body["alias"] = fmt.Sprint("bad-", i)
		for k, v := range b.edit {
			if v == nil {
				delete(body, k)
			} else {
				body[k] = v
			}
		}
		wantError(t, s.Call("POST", "/api/v1/admin/images", body, adm), 400, "Bad Request", b.field)
	}
	// Nothing of the refused creates was written.
	if r := s.Must(200, "GET", "/api/v1/images/public", nil, user); pagination(r) != "total=1 page=1 limit=20 pages=1" {
		t.Fatalf("after refused creates: %s", pagination(r))
	}

	// Single image: with serial; 404 unknown; 400 malformed.
	r = s.Must(200, "GET", "/api/v1/images/public/"+id, nil, user)
	if data(r)["serial"] != "20260101_01" || data(r)["alias"] != "debian/12" {
		t.Fatalf("single %s", r.Raw)
	}
	wantError(t, s.Call("GET", "/api/v1/images/public/img_000000000000000000000000", nil, user), 404, "Not Found")
	wantError(t, s.Call("GET", "/api/v1/images/public/../../etc", nil, user), 404, "Not Found")
	wantError(t, s.Call("GET", "/api/v1/images/public/nope", nil, user), 400, "Bad Request", "id")
	wantError(t, s.Call("GET", "/api/v1/images/public/"+id, nil, ""), 401, "Unauthorized")

	// Icons: generated when none was uploaded, the upload otherwise.
	gen := pngOf(t, get(s, "/api/v1/images/"+id+"/icon", user))
	if gen.Bounds().Dx() != 64 {
		t.Fatalf("generated icon %v", gen.Bounds())
	}
	up := s.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "with-icon", "image_name": "I", "os": "linux",
		"architecture": "arm64", "icon_png_b64": pngB64(t, 7, 5)}, adm)
	if img := pngOf(t, get(s, "/api/v1/images/"+data(up)["id"].(string)+"/icon", user)); img.Bounds().Dx() != 7 || img.Bounds().Dy() != 5 {
		t.Fatalf("uploaded icon came back %v", img.Bounds())
	}
	if res := get(s, "/api/v1/images/img_000000000000000000000000/icon", user); res.StatusCode != 404 {
		t.Fatalf("unknown icon: %d", res.StatusCode)
	}
}

func TestImagesPublicList(t *testing.T) {
	s := serve(t)
	adm := s.Admin()
	ids := map[string]string{}
	for _, in := range []map[string]any{
		{"alias": "alpine", "image_name": "Alpine Linux", "os": "Alpine", "architecture": "amd64", "price": 0, "tags": []string{"tiny"}},
		{"alias": "debian", "image_name": "Debian", "os": "Debian", "architecture": "amd64", "price": 2.5, "description": "Stable base"},
		{"alias": "debian-arm", "image_name": "Debian", "os": "Debian", "architecture": "arm64", "price": 3},
		{"alias": "ubuntu", "image_name": "Ubuntu", "os": "Ubuntu", "architecture": "amd64", "price": 10, "tags": []string{"LTS", "desktop"}},
		{"alias": "ubuntu-pi", "image_name": "Ubuntu", "os": "Ubuntu", "architecture": "armhf", "price": 0.99},
		{"alias": "fedora", "image_name": "Fedora", "os": "Fedora", "architecture": "amd64", "description": "Has a desktop"},
	} {
		ids[in["alias"].(string)] = data(s.Must(201, "POST", "/api/v1/admin/images", in, adm))["id"].(string)
	}
	a, _ := s.User(adm, "rater-a")
	b, _ := s.User(adm, "rater-b")
	for _, r := range []struct {
		tok, alias string
		rating     float64
	}{{a, "alpine", 5}, {b, "alpine", 4}, {a, "debian", 3}, {a, "ubuntu", 1}, {b, "ubuntu", 2}, {a, "fedora", 4.25}} {
		s.Must(200, "POST", "/api/v1/images/rate/"+ids[r.alias], map[string]any{"rating": r.rating}, r.tok)
	}
	cases := []struct{ query, want, page string }{
		{"", "fedora,ubuntu-pi,ubuntu,debian-arm,debian,alpine", "total=6 page=1 limit=20 pages=1"},
		{"sort_by=alias&sort_order=asc", "alpine,debian,debian-arm,fedora,ubuntu,ubuntu-pi", "total=6 page=1 limit=20 pages=1"},
		{"sort_by=added_date&sort_order=asc&limit=4&page=2", "ubuntu-pi,fedora", "total=6 page=2 limit=4 pages=2"},
		{"sort_by=price&sort_order=desc&os=ubuntu", "ubuntu,ubuntu-pi", "total=2 page=1 limit=20 pages=1"},
		{"sort_by=rating&sort_order=desc&min_rating=1", "alpine,fedora,debian,ubuntu", "total=4 page=1 limit=20 pages=1"},
		{"os=DEBIAN&sort_by=alias&sort_order=asc", "debian,debian-arm", "total=2 page=1 limit=20 pages=1"},
		{"architecture=amd64&sort_by=alias&sort_order=asc", "alpine,debian,fedora,ubuntu", "total=4 page=1 limit=20 pages=1"},
		{"max_price=0&sort_by=alias&sort_order=asc", "alpine,fedora", "total=2 page=1 limit=20 pages=1"},
		{"min_price=0.99&max_price=3&sort_by=price&sort_order=asc", "ubuntu-pi,debian,debian-arm", "total=3 page=1 limit=20 pages=1"},
		{"min_rating=1.5&max_rating=4.25&sort_by=rating&sort_order=asc", "ubuntu,debian,fedora", "total=3 page=1 limit=20 pages=1"},
		{"search=lts", "ubuntu", "total=1 page=1 limit=20 pages=1"},
		{"search=" + url.QueryEscape("DESKTOP") + "&sort_by=alias&sort_order=asc", "fedora,ubuntu", "total=2 page=1 limit=20 pages=1"},
		{"search=" + url.QueryEscape("alpine linux"), "alpine", "total=1 page=1 limit=20 pages=1"},
		{"architecture=amd64&max_price=5&search=e&sort_by=alias&sort_order=desc", "fedora,debian,alpine", "total=3 page=1 limit=20 pages=1"},
		{"limit=100&page=9", "", "total=6 page=9 limit=100 pages=1"},
		{"os=plan9", "", "total=0 page=1 limit=20 pages=0"},
		{"_=1700000000", "fedora,ubuntu-pi,ubuntu,debian-arm,debian,alpine", "total=6 page=1 limit=20 pages=1"},
	}
	for _, c := range cases {
		r := s.Must(200, "GET", "/api/v1/images/public?"+c.query, nil, a)
		if got := aliases(r); got != c.want || pagination(r) != c.page {
			t.Errorf("?%s: %q %s, want %q %s", c.query, got, pagination(r), c.want, c.page)
		}
	}
	one := s.Must(200, "GET", "/api/v1/images/public?search=alpine", nil, a)
	rec := data(one)["images"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "alias", "description", "image_name", "architecture", "os", "release", "variant", "size", "price", "added_date", "average_rating", "rating_count", "icon_url", "prespawn"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("list record lacks %s: %v", k, rec)
		}
	}
	if rec["average_rating"] != 4.5 || rec["rating_count"] != 2.0 {
		t.Errorf("alpine ratings %v", rec)
	}
	if _, ok := rec["serial"]; ok {
		t.Errorf("list record carries serial: %v", rec)
	}

	bad := []struct{ query, field string }{
		{"page=0", "page"},
		{"page=-3", "page"},
		{"page=x", "page"},
		{"limit=101", "limit"},
		{"limit=0", "limit"},
		{"sort_by=size", "sort_by"},
		{"sort_order=sideways", "sort_order"},
		{"min_price=5&max_price=1", "min_price"},
		{"min_price=-1", "min_price"},
		{"max_price=abc", "max_price"},
		{"min_rating=4&max_rating=2", "min_rating"},
		{"min_rating=6", "min_rating"},
		{"max_rating=-0.5", "max_rating"},
		{"limit=10&limit=20", "limit"},
		{"search=" + strings.Repeat("x", 201), "search"},
	}
	for _, c := range bad {
		wantError(t, s.Call("GET", "/api/v1/images/public?"+c.query, nil, a), 400, "Bad Request", c.field)
	}
	wantError(t, s.Call("GET", "/api/v1/images/public", nil, ""), 401, "Unauthorized")
}

func TestImagesImportRateLibrary(t *testing.T) {
	s := serve(t)
	adm := s.Admin()
	u, _ := s.User(adm, "lib-user")
	other, _ := s.User(adm, "other-user")
	free := data(s.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "free", "image_name": "F", "os": "linux", "architecture": "amd64"}, adm))["id"].(string)
	paid := data(s.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "paid", "image_name": "P", "os": "linux", "architecture": "amd64", "price": 1}, adm))["id"].(string)

	r := s.Must(200, "POST", "/api/v1/images/import/"+free, nil, u)
	if d, ok := r.Body["data"].(map[string]any); !ok || len(d) != 0 {
		t.Fatalf("import answered %s, want empty data", r.Raw)
	}
	wantError(t, s.Call("POST", "/api/v1/images/import/"+free, nil, u), 400, "Bad Request", "already imported")
	wantError(t, s.Call("POST", "/api/v1/images/import/"+paid, nil, u), 400, "Bad Request", "not free")
	wantError(t, s.Call("POST", "/api/v1/images/import/img_000000000000000000000000", nil, u), 404, "Not Found")
	wantError(t, s.Call("POST", "/api/v1/images/import/bogus", nil, u), 400, "Bad Request", "id")
	wantError(t, s.Call("POST", "/api/v1/images/import/"+free, nil, ""), 401, "Unauthorized")

	// Ratings: 0-5, one per user, replaced.
	for _, bad := range []any{6, -1, 5.5, 4.567, "4", nil} {
		body := map[string]any{"rating": bad}
		if bad == nil {
			body = map[string]any{}
		}
		wantError(t, s.Call("POST", "/api/v1/images/rate/"+free, body, u), 400, "Bad Request", "rating")
	}
	wantError(t, s.Call("POST", "/api/v1/images/rate/"+free, map[string]any{"rating": 3, "stars": 1}, u), 400, "Bad Request", "stars")
	wantError(t, s.Call("POST", "/api/v1/images/rate/img_000000000000000000000000", map[string]any{"rating": 3}, u), 404, "Not Found")
	steps := []struct {
		tok         string
		rating, avg float64
		count       float64
	}{{u, 5, 5, 1}, {other, 0, 2.5, 2}, {u, 1, 0.5, 2}, {u, 4, 2, 2}}
	for _, st := range steps {
		d := data(s.Must(200, "POST", "/api/v1/images/rate/"+free, map[string]any{"rating": st.rating}, st.tok))
		if d["new_rating"] != st.rating || d["average_rating"] != st.avg || d["rating_count"] != st.count {
			t.Fatalf("rate %v: %v, want avg %v count %v", st.rating, d, st.avg, st.count)
		}
	}

	// Library: with the caller's rating; another user's library is theirs.
	lib := data(s.Must(200, "GET", "/api/v1/images/user", nil, u))
	imgs := lib["images"].([]any)
	if len(imgs) != 1 {
		t.Fatalf("library %v", lib)
	}
	rec := imgs[0].(map[string]any)
	if rec["id"] != free || rec["user_rating"] != 4.0 || rec["has_rated"] != true || rec["average_rating"] != 2.0 {
		t.Fatalf("library record %v", rec)
	}
	if _, ok := rec["added_date"]; ok {
		t.Fatalf("library record has added_date: %v", rec)
	}
	if p := lib["pagination"].(map[string]any); p["total"] != 1.0 || p["limit"] != 20.0 || p["page"] != 1.0 || p["totalPages"] != 1.0 {
		t.Fatalf("library pagination %v", p)
	}
	if d := data(s.Must(200, "GET", "/api/v1/images/user", nil, other)); len(d["images"].([]any)) != 0 {
		t.Fatalf("other user's library %v", d)
	}
	s.Must(200, "POST", "/api/v1/images/import/"+free, nil, other)
	orec := data(s.Must(200, "GET", "/api/v1/images/user?sort_by=created_at&sort_order=asc&page=1&limit=1", nil, other))["images"].([]any)[0].(map[string]any)
	if orec["has_rated"] != true || orec["user_rating"] != 0.0 {
		t.Fatalf("a 0 rating is still a rating: %v", orec)
	}
	for _, q := range []struct{ query, field string }{{"page=0", "page"}, {"limit=500", "limit"}, {"sort_by=price", "sort_by"}} {
		wantError(t, s.Call("GET", "/api/v1/images/user?"+q.query, nil, u), 400, "Bad Request", q.field)
	}
	wantError(t, s.Call("GET", "/api/v1/images/user", nil, ""), 401, "Unauthorized")
}
