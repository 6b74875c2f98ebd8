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

// TestJSONForms: every amount round-trips through its decimal string, and
// a string literal decodes the same whether or not JSON escapes spell it.
func TestJSONForms(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a    money.Amount
		text string
	}{{0, "0.00"}, {5, "0.05"}, {-1, "-0.01"}, {100, "1.00"}, {123456, "1234.56"}, {-305, "-3.05"}, {money.Max, "23058430092136939.51"}} {
		if got := c.a.String(); got != c.text {
			t.Errorf("String(%d) = %q, want %q", int64(c.a), got, c.text)
		}
		raw, err := json.Marshal(c.a)
		if err != nil || string(raw) != `"`+c.text+`"` {
			t.Errorf("Marshal(%d) = %s, %v", int64(c.a), raw, err)
		}
		var back money.Amount
		if err := json.Unmarshal(raw, &back); err != nil || back != c.a {
			t.Errorf("Unmarshal(%s) = %d, %v", raw, int64(back), err)
		}
	}
	for in, want := range map[string]money.Amount{`"\u0031.00"`: 100, `"-\u0033.05"`: -305, `"12.5"`: 1250} {
		var got money.Amount
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("Unmarshal(%s) = %d, %v; want %d", in, int64(got), err, int64(want))
		}
	}
	for _, in := range []string{`null`, `12.5`, `""`, `"1.234"`, `"\"1\""`, `"1e3"`, `"--1"`} {
		var got money.Amount
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %d", in, int64(got))
		}
	}
}
