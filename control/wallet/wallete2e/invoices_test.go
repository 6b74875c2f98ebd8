package wallete2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

func TestInvoicesNumberedWithPDF(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext missing (apt install poppler-utils; scripts/setup.sh installs it)")
	}
	s := controltest.Start(t)
	admin := s.Admin()
	uid, tok := s.User(admin, "dora@example.com")
	c := credit(s, admin, uid, "500.00")
	creditTx := c["transaction"].(map[string]any)["id"].(string)
	var txIDs []string
	for _, a := range []string{"12.34", "40.00", "7.77"} {
		txIDs = append(txIDs, data(s.Must(transfer(s, tok, map[string]any{"amount": a}), 200))["transaction_id"].(string))
	}
	year := time.Now().UTC().Year()
	// First generation numbers the invoice, the second says it exists.
	g := s.Must(s.Call("POST", "/api/v1/wallet/invoices/generate/"+txIDs[0], nil, tok), 200)
	num := data(g)["invoice_number"].(string)
	if num != fmt.Sprintf("INV-%d-000001", year) || g.Body["message"] != "Invoice generated" {
		t.Fatalf("generate: %s", g.Raw)
	}
	g2 := s.Must(s.Call("POST", "/api/v1/wallet/invoices/generate/"+txIDs[0], nil, tok), 200)
	if data(g2)["invoice_id"] != data(g)["invoice_id"] || !strings.Contains(g2.Body["message"].(string), "already exists") {
		t.Fatalf("second generate: %s", g2.Raw)
	}
	// Concurrent generation of the others: numbers stay consecutive, one invoice per transaction.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		for _, id := range append(txIDs[1:], creditTx) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := s.Call("POST", "/api/v1/wallet/invoices/generate/"+id, nil, tok); r.Status != 200 {
					t.Errorf("generate %s: %s", id, r.Raw)
				}
			}()
		}
	}
	wg.Wait()
	l := data(s.Must(s.Call("GET", "/api/v1/wallet/invoices?sort_by=invoice_number&sort_order=asc", nil, tok), 200))
	invs := l["invoices"].([]any)
	if len(invs) != 4 {
		t.Fatalf("%d invoices, want 4: %v", len(invs), l)
	}
	for i, v := range invs {
		inv := v.(map[string]any)
		if want := fmt.Sprintf("INV-%d-%06d", year, i+1); inv["invoice_number"] != want {
			t.Fatalf("invoice %d numbered %v, want %s", i, inv["invoice_number"], want)
		}
		if inv["status"] != "paid" || inv["currency"] != "USD" || inv["items"] != nil || inv["transaction"] == nil {
			t.Fatalf("list entry: %v", inv)
		}
	}
	// Filters and sort fallback.
	f := data(s.Must(s.Call("GET", "/api/v1/wallet/invoices?filter="+q(`{"amount":{"gte":10,"lt":"100"},"status":"paid"}`)+"&sort_by=amount&sort_order=asc", nil, tok), 200))
	got := f["invoices"].([]any)
	if len(got) != 2 || got[0].(map[string]any)["amount"] != 12.34 || got[1].(map[string]any)["amount"] != 40.0 {
		t.Fatalf("filtered: %v", f)
	}
	f = data(s.Must(s.Call("GET", "/api/v1/wallet/invoices?filter="+q(`{"transaction_id":{"in":["`+creditTx+`"]},"invoice_number":{"like":"inv-%"}}`)+"&sort_by=nonsense", nil, tok), 200))
	if n := len(f["invoices"].([]any)); n != 1 {
		t.Fatalf("in filter: %v", f)
	}
	f = data(s.Must(s.Call("GET", "/api/v1/wallet/invoices?limit=2&page=2&filter="+q(`{"amount":{"ne":7.77}}`), nil, tok), 200))
	if pg := f["pagination"].(map[string]any); pg["total"] != float64(3) || pg["totalPages"] != float64(2) || len(f["invoices"].([]any)) != 1 {
		t.Fatalf("page 2: %v", f)
	}
	// One invoice in full.
	id := data(g)["invoice_id"].(string)
	oneRaw := s.Must(s.Call("GET", "/api/v1/wallet/invoices/"+id, nil, tok), 200)
	one := data(oneRaw)
	items := one["items"].([]any)
	bill := one["billing_details"].(map[string]any)
	if one["amount"] != 12.34 || len(items) != 2 || bill["payment_method_type"] == nil || one["transaction"].(map[string]any)["id"] != txIDs[0] {
		t.Fatalf("invoice: %v", one)
	}
	// The items' amounts take the invoice's form: numbers with two decimals.
	if items[0].(map[string]any)["amount"] != 11.72 || items[1].(map[string]any)["amount"] != 0.62 ||
		!strings.Contains(string(oneRaw.Raw), `"amount":0.62`) || !strings.Contains(string(oneRaw.Raw), `"amount":12.34`) {
		t.Fatalf("items (12.34 at 500 bps: fee 0.617 → 0.62): %s", oneRaw.Raw)
	}
	// The document says so for both.
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(s.Must(s.Call("GET", "/openapi.json", nil, ""), 200).Raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Invoice", "InvoiceItem"} {
		if a := doc.Components.Schemas[name].Properties["amount"]; a["type"] != "number" || a["multipleOf"] != 0.01 {
			t.Fatalf("%s.amount documented as %v", name, a)
		}
	}
	// The PDF: a real one, with number and total as text.
	res, err := s.HTTP.Get(s.URL + "/api/v1/wallet/invoices/" + id + "/pdf")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("pdf without credential: %d", res.StatusCode)
	}
	r := s.Must(s.Call("GET", "/api/v1/wallet/invoices/"+id+"/pdf", nil, tok), 200)
	if ct := r.Header.Get("Content-Type"); ct != "application/pdf" || !strings.HasPrefix(string(r.Raw), "%PDF-") {
		t.Fatalf("pdf: %s %q", ct, r.Raw[:min(20, len(r.Raw))])
	}
	path := filepath.Join(t.TempDir(), "inv.pdf")
	if err := os.WriteFile(path, r.Raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pdftotext", "-layout", path, "-").CombinedOutput()
	if err != nil {
		t.Fatalf("pdftotext: %v %s", err, out)
	}
	text := string(out)
	for _, want := range []string{num, "Total", "12.34 USD", "dora@example.com", "deckhand platform", "11.72", "0.62", txIDs[0]} {
		if !strings.Contains(text, want) {
			t.Errorf("PDF text lacks %q:\n%s", want, text)
		}
	}
	// Others' invoices and transactions are not found.
	_, eve := s.User(admin, "eve@example.com")
	s.Must(s.Call("GET", "/api/v1/wallet/invoices/"+id, nil, eve), 404)
	s.Must(s.Call("GET", "/api/v1/wallet/invoices/"+id+"/pdf", nil, eve), 404)
	s.Must(s.Call("POST", "/api/v1/wallet/invoices/generate/"+txIDs[1], nil, eve), 404)
}

func TestPaymentMethodsOneDefaultNoCardNumbers(t *testing.T) {
	s := controltest.Start(t)
	admin := s.Admin()
	_, tok := s.User(admin, "finn@example.com")
	const pan = "4242424242424242"
	r := s.Must(s.Call("POST", "/api/v1/wallet/payment-methods", map[string]any{"type": "credit_card", "name": "Visa",
		"details": map[string]any{"card_number": "4242 4242 4242 4242", "cvc": "123", "exp_month": 12, "exp_year": 2030, "memo": pan}}, tok), 201)
	a := data(r)
	d := a["details"].(map[string]any)
	// is_default defaults to false (docs/spec/interface.md), also for a user's first method.
	if a["is_default"] != false || a["status"] != "active" || d["last4"] != "4242" || d["brand"] != "visa" || d["cvc"] != nil ||
		d["card_number"] != nil || d["memo"] != "**** 4242" || d["exp_year"] != float64(2030) {
		t.Fatalf("first method: %s", r.Raw)
	}
	if strings.Contains(string(r.Raw), pan) || strings.Contains(string(r.Raw), "4242 4242 4242 4242") {
		t.Fatalf("card number answered: %s", r.Raw)
	}
	b := data(s.Must(s.Call("POST", "/api/v1/wallet/payment-methods", map[string]any{"type": "paypal", "name": "PayPal", "details": map[string]any{"email": "f@example.com"}}, tok), 201))
	if b["is_default"] != false {
		t.Fatalf("second method is default: %v", b)
	}
	c := data(s.Must(s.Call("POST", "/api/v1/wallet/payment-methods", map[string]any{"type": "bank_transfer", "name": "Bank", "is_default": true}, tok), 201))
	if c["is_default"] != true {
		t.Fatalf("third method: %v", c)
	}
	defaults := func() (n int, id string) {
		l := s.Must(s.Call("GET", "/api/v1/wallet/payment-methods", nil, tok), 200)
		for _, m := range l.Body["data"].([]any) {
			if m.(map[string]any)["is_default"] == true {
				n++
				id = m.(map[string]any)["id"].(string)
			}
		}
		return n, id
	}
	if n, id := defaults(); n != 1 || id != c["id"] {
		t.Fatalf("defaults %d (%s), want exactly %s", n, id, c["id"])
	}
	// PUT /default and PUT is_default, concurrently: still exactly one.
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.Call("PUT", "/api/v1/wallet/payment-methods/"+a["id"].(string)+"/default", nil, tok)
		}()
		go func() {
			defer wg.Done()
			s.Call("PUT", "/api/v1/wallet/payment-methods/"+b["id"].(string), map[string]any{"is_default": true}, tok)
		}()
	}
	wg.Wait()
	if n, _ := defaults(); n != 1 {
		t.Fatalf("%d defaults after racing PUTs", n)
	}
	s.Must(s.Call("PUT", "/api/v1/wallet/payment-methods/"+a["id"].(string)+"/default", nil, tok), 200)
	// The default cannot be unset or deactivated; another can.
	s.Must(s.Call("PUT", "/api/v1/wallet/payment-methods/"+a["id"].(string), map[string]any{"is_default": false}, tok), 400)
	s.Must(s.Call("PUT", "/api/v1/wallet/payment-methods/"+a["id"].(string), map[string]any{"status": "inactive"}, tok), 400)
	u := data(s.Must(s.Call("PUT", "/api/v1/wallet/payment-methods/"+b["id"].(string), map[string]any{"status": "inactive",
		"details": map[string]any{"number": "5555555555554444"}}, tok), 200))
	if u["status"] != "inactive" || u["details"].(map[string]any)["last4"] != "4444" || u["details"].(map[string]any)["brand"] != "mastercard" {
		t.Fatalf("update: %v", u)
	}
	s.Must(s.Call("PUT", "/api/v1/wallet/payment-methods/"+b["id"].(string)+"/default", nil, tok), 400)
	s.Must(s.Call("PUT", "/api/v1/wallet/payment-methods/"+b["id"].(string), map[string]any{"status": "paused"}, tok), 400)
	s.Must(s.Call("PUT", "/api/v1/wallet/payment-methods/"+b["id"].(string), map[string]any{"status": "active"}, tok), 200)
	got := data(s.Must(s.Call("GET", "/api/v1/wallet/payment-methods/"+a["id"].(string), nil, tok), 200))
	if got["is_default"] != true {
		t.Fatalf("get: %v", got)
	}
	for _, bad := range []map[string]any{{"name": "x"}, {"type": "credit_card"}, {"type": "Credit Card", "name": "x"}, {"type": "x", "name": "y", "details": "str"}} {
		s.Must(s.Call("POST", "/api/v1/wallet/payment-methods", bad, tok), 400)
	}
	_, other := s.User(admin, "gus@example.com")
	s.Must(s.Call("GET", "/api/v1/wallet/payment-methods/"+a["id"].(string), nil, other), 404)
	s.Must(s.Call("PUT", "/api/v1/wallet/payment-methods/"+a["id"].(string)+"/default", nil, other), 404)

	// At rest: neither the methods nor the event log hold the number.
	if controltest.OnPostgres() {
		db, err := pgstore.Open(context.Background(), controltest.DatabaseURL(t, s.Data))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_ = db.View(func(tx *store.Tx) error {
			for _, bucket := range []string{"wallet_payment_methods", "events"} {
				_ = tx.ForEach(bucket, func(k string, raw []byte) error {
					if strings.Contains(onlyDigits(string(raw)), pan) || strings.Contains(onlyDigits(string(raw)), "5555555555554444") {
						t.Errorf("%s/%s holds a card number: %s", bucket, k, raw)
					}
					return nil
				})
			}
			return nil
		})
	} else {
		s.Stop()
		raw, err := os.ReadFile(filepath.Join(s.Data, "control.db"))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{pan, "4242 4242 4242 4242", "5555555555554444"} {
			if strings.Contains(string(raw), bad) {
				t.Fatalf("control.db holds the card number %s", bad)
			}
		}
	}
}

func onlyDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestServeRefusesABadFee(t *testing.T) {
	for _, bps := range []string{"-1", "10000"} {
		out, err := controltest.Out("serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--transfer-fee-bps", bps)
		if err == nil || !strings.Contains(out, "--transfer-fee-bps: must be between 0 and 9999") {
			t.Fatalf("--transfer-fee-bps %s: %v\n%s", bps, err, out)
		}
	}
}
