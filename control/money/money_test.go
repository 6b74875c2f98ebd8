package money_test

import (
	"encoding/json"
	"testing"

	"deckhand/control/money"
)

func TestParse(t *testing.T) {
	t.Parallel()
	good := map[string]money.Amount{"0": 0, "12": 1200, "12.5": 1250, "12.50": 1250, "0.01": 1, "007.10": 710}
	for in, want := range good {
		got, err := money.Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "+1", "1e3", "1.", ".5", "1.234", " 1", "1,5", "NaN", "0x10", "99999999999999999999"} {
		if _, err := money.Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

func TestJSONAndFee(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(struct{ A money.Amount }{-305})
	if string(raw) != `{"A":"-3.05"}` {
		t.Fatalf("marshal: %s", raw)
	}
	var back struct{ A money.Amount }
	if err := json.Unmarshal(raw, &back); err != nil || back.A != -305 {
		t.Fatalf("unmarshal: %v %v", back.A, err)
	}
	cases := []struct {
		amount money.Amount
		bps    int
		want   money.Amount
	}{{10000, 500, 500}, {1, 500, 0}, {10, 500, 1}, {30, 500, 2}, {0, 500, 0}, {1234, 0, 0}}
	for _, c := range cases {
		if got := money.Fee(c.amount, c.bps); got != c.want {
			t.Errorf("Fee(%v, %d) = %v, want %v", c.amount, c.bps, got, c.want)
		}
	}
}
