package cataloge2e_test

import (
	"strings"
	"testing"
)

func names(r []any) string {
	var out []string
	for _, v := range r {
		out = append(out, v.(map[string]any)["name"].(string))
	}
	return strings.Join(out, ",")
}

func TestServers(t *testing.T) {
	s := serve(t)
	adm := s.Admin()
	alice, aliceID := s.User(adm, "alice")
	bob, _ := s.User(adm, "bob")

	for _, b := range []struct {
		field string
		body  map[string]any
	}{
		{"name", map[string]any{"region": "eu"}},
		{"region", map[string]any{"name": "a", "region": "eu west"}},
		{"price", map[string]any{"name": "a", "region": "eu", "price": -2}},
		{"price", map[string]any{"name": "a", "region": "eu", "price": 1.001}},
		{"specs", map[string]any{"name": "a", "region": "eu", "specs": []int{1}}},
		{"owner", map[string]any{"name": "a", "region": "eu", "owner": "x"}},
	} {
		wantError(t, s.Call("POST", "/api/v1/admin/servers", b.body, adm), 400, "Bad Request", b.field)
	}
	wantError(t, s.Call("POST", "/api/v1/admin/servers", map[string]any{"name": "a", "region": "eu"}, alice), 403, "Forbidden")

	mk := func(name, region string, price float64) string {
		r := s.Must(201, "POST", "/api/v1/admin/servers", map[string]any{"name": name, "region": region, "price": price, "specs": map[string]any{"cpu": 8}}, adm)
		d := data(r)
		if d["status"] != "available" || d["price"] != price || d["specs"].(map[string]any)["cpu"] != 8.0 {
			t.Fatalf("created %s", r.Raw)
		}
		return d["id"].(string)
	}
	free := mk("free-box", "eu-west", 0)
	big := mk("big-box", "eu-west", 25)
	mk("us-box", "us-east", 5)

	avail := func(tok string) string {
		return names(s.Must(200, "GET", "/api/v1/servers/available", nil, tok).Body["data"].([]any))
	}
	if got := avail(bob); got != "free-box,big-box,us-box" {
		t.Fatalf("marketplace %q", got)
	}
	r := s.Must(200, "POST", "/api/v1/servers/"+free+"/rent", nil, alice)
	if d := data(r); d["price_paid"] != 0.0 || d["remaining_balance"] != nil || d["server"].(map[string]any)["renter_id"] != aliceID {
		t.Fatalf("free rent %s", r.Raw)
	}
	wantError(t, s.Call("POST", "/api/v1/servers/"+big+"/rent", nil, alice), 400, "Bad Request")
	if got := avail(bob); got != "big-box,us-box" {
		t.Fatalf("a refused rental left the marketplace as %q", got)
	}
	s.Must(200, "POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": aliceID, "amount": "30", "reason": "test"}, adm)
	r = s.Must(200, "POST", "/api/v1/servers/"+big+"/rent", nil, alice)
	if d := data(r); d["price_paid"] != 25.0 || d["remaining_balance"] != 5.0 || d["server"].(map[string]any)["status"] != "rented" {
		t.Fatalf("priced rent %s", r.Raw)
	}
	if got := avail(bob); got != "us-box" {
		t.Fatalf("marketplace after rentals %q", got)
	}
	if got := names(s.Must(200, "GET", "/api/v1/servers", nil, alice).Body["data"].([]any)); got != "free-box,big-box" {
		t.Fatalf("alice's servers %q", got)
	}
	if got := s.Must(200, "GET", "/api/v1/servers", nil, bob).Body["data"].([]any); len(got) != 0 {
		t.Fatalf("bob's servers %v", got)
	}
	if d := data(s.Must(200, "GET", "/api/v1/servers/"+big, nil, alice)); d["renter_id"] != aliceID || d["rented_until"] == nil {
		t.Fatalf("alice's rental %v", d)
	}
	wantError(t, s.Call("GET", "/api/v1/servers/"+big, nil, bob), 404, "Not Found")
	wantError(t, s.Call("POST", "/api/v1/servers/"+big+"/rent", nil, bob), 404, "Not Found") // as reading it
	wantError(t, s.Call("POST", "/api/v1/servers/"+big+"/rent", nil, alice), 409, "Conflict", "already rented")
	wantError(t, s.Call("GET", "/api/v1/servers/srv_000000000000000000000000", nil, bob), 404, "Not Found")
	wantError(t, s.Call("GET", "/api/v1/servers/12", nil, bob), 400, "Bad Request", "id")
	wantError(t, s.Call("POST", "/api/v1/servers/srv_000000000000000000000000/rent", nil, bob), 404, "Not Found")
	wantError(t, s.Call("GET", "/api/v1/servers", nil, ""), 401, "Unauthorized")
	if d := data(s.Must(200, "GET", "/api/v1/servers/"+big, nil, adm)); d["renter_id"] != aliceID {
		t.Fatalf("admin view %v", d)
	}
}

// Every route of the two domains is in the OpenAPI document with its policy.
func TestOpenAPIDocumentsCatalogRoutes(t *testing.T) {
	s := serve(t)
	doc := s.Must(200, "GET", "/openapi.json", nil, "").Body
	paths := doc["paths"].(map[string]any)
	for _, want := range []struct{ path, method, policy string }{
		{"/api/v1/images/public", "get", "signed-in"},
		{"/api/v1/images/public/{id}", "get", "signed-in"},
		{"/api/v1/images/{id}/icon", "get", "signed-in"},
		{"/api/v1/images/user", "get", "signed-in"},
		{"/api/v1/images/import/{id}", "post", "signed-in"},
		{"/api/v1/images/purchase/{id}", "post", "signed-in"},
		{"/api/v1/images/rate/{id}", "post", "signed-in"},
		{"/api/v1/admin/images", "post", "admin"},
		{"/api/v1/servers/available", "get", "signed-in"},
		{"/api/v1/servers/{id}/rent", "post", "signed-in"},
		{"/api/v1/servers", "get", "signed-in"},
		{"/api/v1/servers/{id}", "get", "signed-in"},
		{"/api/v1/admin/servers", "post", "admin"},
	} {
		p, _ := paths[want.path].(map[string]any)
		op, _ := p[want.method].(map[string]any)
		if op == nil || op["x-policy"] != want.policy {
			t.Errorf("%s %s: %v", want.method, want.path, op["x-policy"])
		}
	}
}
