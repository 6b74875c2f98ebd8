package wallete2e_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"deckhand/control/controltest"
	"deckhand/control/money"
)

func TestMain(m *testing.M) { controltest.Main(m) }

type srv = controltest.Server

func data(r controltest.Resp) map[string]any { return controltest.Data(r) }

// amt reads a decimal-string amount of a response.
func amt(t testing.TB, v any) money.Amount {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("amount %v (%T) is not a decimal string", v, v)
	}
	neg := strings.HasPrefix(s, "-")
	a, err := money.Parse(strings.TrimPrefix(s, "-"))
	if err != nil {
		t.Fatalf("amount %q: %v", s, err)
	}
	if neg {
		a = -a
	}
	return a
}

func credit(s *srv, admin, user, amount string) map[string]any {
	s.T.Helper()
	return data(s.Must(s.Call("POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": user, "amount": amount, "reason": "test top-up"}, admin), 200))
}

func transfer(s *srv, tok string, body any) controltest.Resp {
	s.T.Helper()
	return s.Call("POST", "/api/v1/wallet/transfer-to-ai", body, tok)
}

func balances(s *srv, tok string) map[string]any {
	s.T.Helper()
	return data(s.Must(s.Call("GET", "/api/v1/wallet/balances", nil, tok), 200))
}

// feesOf sums every AI fee record of the user (all pages).
func feesOf(s *srv, tok string) money.Amount {
	s.T.Helper()
	var sum money.Amount
	for page := 1; ; page++ {
		d := data(s.Must(s.Call("GET", fmt.Sprintf("/api/v1/wallet/ai-fees?limit=100&page=%d", page), nil, tok), 200))
		fees, _ := d["fees"].([]any)
		for _, f := range fees {
			sum += amt(s.T, f.(map[string]any)["amount"])
		}
		pg := d["pagination"].(map[string]any)
		if float64(page) >= pg["totalPages"].(float64) {
			return sum
		}
	}
}

// verify runs `deckhand-control wallet verify` on the server's store (a
// server on --data must be stopped first: it holds the file lock).
func verify(t *testing.T, dataDir string) string {
	t.Helper()
	args := []string{"wallet", "verify", "--data", dataDir}
	if controltest.OnPostgres() {
		args = append(args, "--database-url", controltest.DatabaseURL(t, dataDir))
	}
	out, err := controltest.Out(args...)
	if err != nil {
		t.Fatalf("wallet verify: %v\n%s", err, out)
	}
	if !strings.Contains(out, "ok: every balance agrees with the ledger") {
		t.Fatalf("wallet verify said:\n%s", out)
	}
	return out
}

func q(s string) string { return url.QueryEscape(s) }
