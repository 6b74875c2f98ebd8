package wallete2e_test

import (
	"strings"
	"sync"
	"testing"

	"deckhand/control/controltest"
)

func TestTransferReceiptIdempotencyAndFee(t *testing.T) {
	s := controltest.Start(t, "--transfer-fee-bps", "250")
	admin := s.Admin()
	uid, tok := s.User(admin, "alice@example.com")
	c := credit(s, admin, uid, "100.00")
	if c["general_balance"] != "100.00" || c["transaction"].(map[string]any)["status"] != "completed" {
		t.Fatalf("credit: %v", c)
	}

	// The fee in force, as a client shows it before a transfer.
	if fee := s.MustDo(200, "GET", "/api/v1/wallet/transfer-fee", nil, tok); fee.Body["message"] != "Transfer fee" || data(fee)["fee_bps"] != float64(250) {
		t.Fatalf("transfer fee: %s", fee.Raw)
	}

	// 10.10 at 250 bps: fee 0.2525 → 0.25 (half up at the cent), net 9.85.
	r := data(s.Must(transfer(s, tok, map[string]any{"amount": "10.10", "idempotency_key": "order-1", "expected_fee_bps": 250}), 200))
	want := map[string]any{"gross_transferred": "10.10", "net_ai_credit": "9.85", "fee": "0.25", "general_balance": "89.90",
		"ai_balance": "9.85", "key_created": true, "limit_sync_pending": false, "replayed": false}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("receipt %s = %v, want %v (%v)", k, r[k], v, r)
		}
	}
	// Same key and amount: the first receipt, replayed, nothing moves.
	again := data(s.Must(transfer(s, tok, map[string]any{"amount": "10.10", "idempotency_key": "order-1"}), 200))
	if again["replayed"] != true || again["transaction_id"] != r["transaction_id"] || again["general_balance"] != "89.90" {
		t.Fatalf("replay: %v", again)
	}
	// Same key, other amount: 409.
	e := s.Must(transfer(s, tok, map[string]any{"amount": "10.11", "idempotency_key": "order-1"}), 409)
	if e.Body["error"] != "TRANSFER_IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("reuse: %s", e.Raw)
	}
	// Fee changed since the client looked: 409.
	e = s.Must(transfer(s, tok, map[string]any{"amount": "1.00", "expected_fee_bps": 500}), 409)
	if e.Body["error"] != "TRANSFER_FEE_CHANGED" || !strings.Contains(e.Body["message"].(string), "250") {
		t.Fatalf("fee changed: %s", e.Raw)
	}
	// Second transfer: half-up at exactly half a cent (0.02 × 250 bps = 0.0005 → 0.00; 0.20 → 0.005 → 0.01).
	r2 := data(s.Must(transfer(s, tok, map[string]any{"amount": "0.20"}), 200))
	if r2["fee"] != "0.01" || r2["net_ai_credit"] != "0.19" || r2["key_created"] != false {
		t.Fatalf("second receipt: %v", r2)
	}
	// Insufficient balance: 400, nothing written.
	e = s.Must(transfer(s, tok, map[string]any{"amount": "1000.00", "idempotency_key": "too-much"}), 400)
	if e.Body["error"] != "Bad Request" || !strings.Contains(e.Body["message"].(string), "insufficient balance") {
		t.Fatalf("insufficient: %s", e.Raw)
	}
	b := balances(s, tok)
	if b["general_balance"] != "89.70" || b["ai_limit"] != "10.04" || b["ai_usage"] != "0.00" || b["ai_remaining"] != "10.04" || b["ai_usage_status"] != "live" {
		t.Fatalf("balances: %v", b)
	}
	g := data(s.Must(s.Call("GET", "/api/v1/wallet/balances/general", nil, tok), 200))
	if g["general_balance"] != "89.70" || g["user_id"] != uid || g["id"] == "" {
		t.Fatalf("general row: %v", g)
	}
	ai := data(s.Must(s.Call("GET", "/api/v1/wallet/balances/ai", nil, tok), 200))
	if ai["ai_limit"] != "10.04" || ai["ai_remaining"] != "10.04" {
		t.Fatalf("ai: %v", ai)
	}
	// The key that failed on balance was not stored: with money it works.
	credit(s, admin, uid, "2000.00")
	s.Must(transfer(s, tok, map[string]any{"amount": "1000.00", "idempotency_key": "too-much"}), 200)

	// Fees: one record per transfer with a fee, sortable.
	f := data(s.Must(s.Call("GET", "/api/v1/wallet/ai-fees?sort_by=amount&sort_order=asc", nil, tok), 200))
	fees := f["fees"].([]any)
	if len(fees) != 3 || fees[0].(map[string]any)["amount"] != "0.01" || fees[2].(map[string]any)["amount"] != "25.00" {
		t.Fatalf("fees: %v", f)
	}
	first := fees[1].(map[string]any)
	if first["transaction_id"] != r["transaction_id"] || first["transaction"].(map[string]any)["amount"] != "10.10" {
		t.Fatalf("fee record: %v", first)
	}
	s.Must(s.Call("GET", "/api/v1/wallet/ai-fees?sort_by=bogus", nil, tok), 400)

	// Transactions: list with limit and sort, one by id.
	l := data(s.Must(s.Call("GET", "/api/v1/wallet/transactions?limit=2&sort_by=amount&sort_order=desc", nil, tok), 200))
	txs := l["transactions"].([]any)
	if len(txs) != 2 || txs[0].(map[string]any)["amount"] != "2000.00" || l["pagination"].(map[string]any)["total"] != float64(5) {
		t.Fatalf("transactions: %v", l)
	}
	one := data(s.Must(s.Call("GET", "/api/v1/wallet/transactions/"+r["transaction_id"].(string), nil, tok), 200))
	if one["transaction_type"] != "transfer_to_ai" || one["amount"] != "10.10" || one["currency"] != "USD" || one["status"] != "completed" {
		t.Fatalf("transaction: %v", one)
	}
	// Another user sees none of it.
	_, bob := s.User(admin, "bob@example.com")
	s.Must(s.Call("GET", "/api/v1/wallet/transactions/"+r["transaction_id"].(string), nil, bob), 404)
	if b := balances(s, bob); b["general_balance"] != "0.00" {
		t.Fatalf("bob: %v", b)
	}
	// Keys are per user: bob's order-1 is his own (and he has no money).
	s.Must(transfer(s, bob, map[string]any{"amount": "10.10", "idempotency_key": "order-1"}), 400)
	s.Must(s.Call("GET", "/api/v1/wallet/balances", nil, ""), 401)
	s.Must(s.Call("POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": uid, "amount": "1", "reason": "x"}, bob), 403)
	s.Must(s.Call("POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": "nobody", "amount": "1", "reason": "x"}, admin), 404)

	s.Stop()
	verify(t, s.Data)
}

func TestBadInputNamesFieldAndWritesNothing(t *testing.T) {
	s := controltest.Start(t)
	admin := s.Admin()
	uid, tok := s.User(admin, "carol@example.com")
	credit(s, admin, uid, "50.00")
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"1.001", map[string]any{"amount": "1.001"}, "amount"},
		{"-1", map[string]any{"amount": "-1"}, "amount"},
		{"1e3", map[string]any{"amount": "1e3"}, "amount"},
		{"empty", map[string]any{"amount": ""}, "amount"},
		{"leading space", map[string]any{"amount": " 1"}, "amount"},
		{"NaN", map[string]any{"amount": "NaN"}, "amount"},
		{"comma", map[string]any{"amount": "1,5"}, "amount"},
		{"number not string", map[string]any{"amount": 1}, "amount"},
		{"missing", map[string]any{}, "amount"},
		{"zero", map[string]any{"amount": "0.00"}, "amount"},
		{"key empty", map[string]any{"amount": "1", "idempotency_key": ""}, "idempotency_key"},
		{"key 129", map[string]any{"amount": "1", "idempotency_key": strings.Repeat("k", 129)}, "idempotency_key"},
		{"key spaces", map[string]any{"amount": "1", "idempotency_key": "   \t "}, "idempotency_key"},
		{"fee -1", map[string]any{"amount": "1", "expected_fee_bps": -1}, "expected_fee_bps"},
		{"fee 10000", map[string]any{"amount": "1", "expected_fee_bps": 10000}, "expected_fee_bps"},
		{"fee fraction", map[string]any{"amount": "1", "expected_fee_bps": 1.5}, "expected_fee_bps"},
		{"unknown field", map[string]any{"amount": "1", "amout": "2"}, "amout"},
		{"malformed", `{"amount": "1"`, "body"},
	}
	for _, c := range cases {
		r := s.Must(transfer(s, tok, asBody(c.body)), 400)
		msg, _ := r.Body["message"].(string)
		if r.Body["error"] != "Bad Request" || !strings.HasPrefix(msg, c.field) {
			t.Errorf("%s: %s (want the message to name %s)", c.name, r.Raw, c.field)
		}
		if strings.Contains(msg, "internal") || strings.Contains(msg, "json:") {
			t.Errorf("%s: leaks internals: %s", c.name, msg)
		}
	}
	// 128 characters is fine.
	s.Must(transfer(s, tok, map[string]any{"amount": "1", "idempotency_key": strings.Repeat("k", 128)}), 200)
	for _, f := range []string{`{bad`, `{"nope":{"eq":1}}`, `{"amount":{"between":[1,2]}}`, `[1]`, `{"amount":{"gt":"1.001"}}`} {
		r := s.Must(s.Call("GET", "/api/v1/wallet/invoices?filter="+q(f), nil, tok), 400)
		if !strings.HasPrefix(r.Body["message"].(string), "filter") {
			t.Errorf("filter %s: %s", f, r.Raw)
		}
	}
	s.Must(s.Call("GET", "/api/v1/wallet/invoices?limit=101", nil, tok), 400)
	for _, body := range []map[string]any{
		{"user_id": uid, "amount": "-5", "reason": "x"},
		{"user_id": uid, "amount": "5", "reason": ""},
		{"user_id": "", "amount": "5", "reason": "x"},
	} {
		s.Must(s.Call("POST", "/api/v1/admin/wallet/credit", body, admin), 400)
	}
	// Nothing partial: one credit and the one good transfer.
	b := balances(s, tok)
	if b["general_balance"] != "49.00" || b["ai_limit"] != "0.95" {
		t.Fatalf("balances after bad input: %v", b)
	}
	l := data(s.Must(s.Call("GET", "/api/v1/wallet/transactions", nil, tok), 200))
	if n := len(l["transactions"].([]any)); n != 2 {
		t.Fatalf("%d transactions, want 2", n)
	}
}

func asBody(b any) any {
	if s, ok := b.(string); ok {
		return []byte(s)
	}
	return b
}

func TestConcurrentRequestsWithOneKeyMoveMoneyOnce(t *testing.T) {
	s := controltest.Start(t)
	admin := s.Admin()
	uid, tok := s.User(admin, "hana@example.com")
	credit(s, admin, uid, "30.00")
	const n = 24
	results := make(chan map[string]any, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := transfer(s, tok, map[string]any{"amount": "20.00", "idempotency_key": "the-one"})
			if r.Status != 200 {
				t.Errorf("status %d: %s", r.Status, r.Raw)
				return
			}
			results <- data(r)
		}()
	}
	wg.Wait()
	close(results)
	fresh, replayed := 0, 0
	tx := ""
	for r := range results {
		if r["replayed"] == true {
			replayed++
		} else {
			fresh++
		}
		if tx != "" && r["transaction_id"] != tx {
			t.Errorf("two transactions: %v and %v", tx, r["transaction_id"])
		}
		tx, _ = r["transaction_id"].(string)
	}
	if fresh != 1 || replayed != n-1 {
		t.Fatalf("%d moved money, %d replayed; want 1 and %d", fresh, replayed, n-1)
	}
	if b := balances(s, tok); b["general_balance"] != "10.00" || b["ai_limit"] != "19.00" {
		t.Fatalf("balances: %v", b)
	}
}
