package cataloge2e_test

import (
	"strings"
	"sync"
	"testing"
)

func TestImagesPurchase(t *testing.T) {
	s := serve(t)
	adm := s.Admin()
	buyer, buyerID := s.User(adm, "buyer")
	free := data(s.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "free", "image_name": "F", "os": "linux", "architecture": "amd64"}, adm))["id"].(string)
	cheap := data(s.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "cheap", "image_name": "C", "os": "linux", "architecture": "amd64", "price": 2.5}, adm))["id"].(string)
	dear := data(s.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "dear", "image_name": "D", "os": "linux", "architecture": "amd64", "price": 100}, adm))["id"].(string)

	// No balance yet: 400, nothing owned.
	wantError(t, s.Call("POST", "/api/v1/images/purchase/"+cheap, nil, buyer), 400, "Bad Request")
	if lib := data(s.Must(200, "GET", "/api/v1/images/user", nil, buyer))["images"].([]any); len(lib) != 0 {
		t.Fatalf("a refused purchase left %v in the library", lib)
	}
	s.Must(200, "POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": buyerID, "amount": "10.00", "reason": "test funds"}, adm)
	wantError(t, s.Call("POST", "/api/v1/images/purchase/"+dear, nil, buyer), 400, "Bad Request")

	r := s.Must(200, "POST", "/api/v1/images/purchase/"+cheap, nil, buyer)
	if d := data(r); d["price_paid"] != 2.5 || d["remaining_balance"] != 7.5 {
		t.Fatalf("purchase answered %s", r.Raw)
	}
	wantError(t, s.Call("POST", "/api/v1/images/purchase/"+cheap, nil, buyer), 400, "Bad Request", "already owned")
	wantError(t, s.Call("POST", "/api/v1/images/purchase/"+free, nil, buyer), 400, "Bad Request", "free")
	wantError(t, s.Call("POST", "/api/v1/images/purchase/img_000000000000000000000000", nil, buyer), 404, "Not Found")
	wantError(t, s.Call("POST", "/api/v1/images/purchase/x", nil, buyer), 400, "Bad Request", "id")
	wantError(t, s.Call("POST", "/api/v1/images/import/"+cheap, nil, buyer), 400, "Bad Request")

	lib := data(s.Must(200, "GET", "/api/v1/images/user", nil, buyer))["images"].([]any)
	if len(lib) != 1 || lib[0].(map[string]any)["id"] != cheap || lib[0].(map[string]any)["has_rated"] != false {
		t.Fatalf("library after purchase %v", lib)
	}

	// Racing purchases of one image by one buyer: one charge.
	other := data(s.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "other", "image_name": "O", "os": "linux", "architecture": "amd64", "price": 1}, adm))["id"].(string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var answers []string
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.Call("POST", "/api/v1/images/purchase/"+other, nil, buyer)
			mu.Lock()
			answers = append(answers, string(r.Raw))
			mu.Unlock()
		}()
	}
	wg.Wait()
	won := 0
	for _, a := range answers {
		switch {
		case strings.Contains(a, `"remaining_balance":6.50`):
			won++
		case strings.Contains(a, "already owned"):
		default:
			t.Errorf("racing purchase answered %s", a)
		}
	}
	if won != 1 {
		t.Fatalf("%d purchases won: %v", won, answers)
	}
	// The balance is what the single charge left: a 6.50 image is now too dear.
	last := data(s.Must(201, "POST", "/api/v1/admin/images", map[string]any{"alias": "last", "image_name": "L", "os": "linux", "architecture": "amd64", "price": 6.51}, adm))["id"].(string)
	wantError(t, s.Call("POST", "/api/v1/images/purchase/"+last, nil, buyer), 400, "Bad Request")
	if lib := data(s.Must(200, "GET", "/api/v1/images/user", nil, buyer))["images"].([]any); len(lib) != 2 {
		t.Fatalf("library after the refused last purchase: %v", lib)
	}
}
