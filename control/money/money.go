// Package money owns exact amounts of money: integer minor units (cents),
// never float64. Amounts travel as decimal strings with two decimals
// ("12.50") in JSON, and parse with one rule everywhere money comes in
// (transfer amounts, admin credits, prices).
package money

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Amount is a sum in minor units (1 = 0.01).
type Amount int64

// Max is the largest amount Parse accepts: large enough for any balance,
// small enough that adding two never overflows.
const Max Amount = math.MaxInt64 / 4

// ErrFormat is the rule every parsed amount must meet.
var ErrFormat = errors.New("must be a decimal string with at most 2 decimals, like \"12.50\" (no sign, no exponent)")

// Parse reads a non-negative decimal string with at most two decimals:
// "12", "12.5", "12.50", "0.01". Signs, exponents, spaces, empty parts
// ("1.", ".5") and more than two decimals are refused.
func Parse(s string) (Amount, error) {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || (hasDot && (frac == "" || len(frac) > 2)) || !digits(whole) || !digits(frac) {
		return 0, ErrFormat
	}
	// The digits with the fraction padded to two are the minor units.
	a, err := strconv.ParseInt(whole+frac+"00"[len(frac):], 10, 64)
	if err != nil || Amount(a) > Max {
		return 0, fmt.Errorf("is too large")
	}
	return Amount(a), nil
}

func digits(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
}

// String renders the amount with two decimals ("12.50", "-3.00").
func (a Amount) String() string {
	var buf [24]byte
	return string(a.appendTo(buf[:0]))
}

// appendTo appends the amount's decimal string to b: amounts are written
// for every record a list answers, so without fmt's allocations.
func (a Amount) appendTo(b []byte) []byte {
	u := uint64(a)
	if a < 0 {
		b, u = append(b, '-'), -u
	}
	b = strconv.AppendUint(b, u/100, 10)
	return append(b, '.', byte('0'+u%100/10), byte('0'+u%10))
}

// Pattern is the form every Amount is written in: a decimal string with
// exactly two decimals, negative only for stored debits.
const Pattern = `^-?[0-9]+\.[0-9]{2}$`

// InputPattern is the form Parse takes: no sign, at most two decimals.
const InputPattern = `^[0-9]+(\.[0-9]{1,2})?$`

// JSONSchema is an Amount's schema in OpenAPI documents: a string, never
// a number, so no client reads money as a float.
func (Amount) JSONSchema() map[string]any {
	return map[string]any{"type": "string", "pattern": Pattern, "example": "12.50",
		"description": "amount of money: a decimal string with two decimals"}
}

// MarshalJSON writes the decimal string.
func (a Amount) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 24), '"')
	return append(a.appendTo(b), '"'), nil
}

// UnmarshalJSON reads a decimal string (as written by MarshalJSON; a
// leading minus is accepted for stored negative amounts such as debits).
func (a *Amount) UnmarshalJSON(b []byte) error {
	if n := len(b); n >= 2 && b[0] == '"' && b[n-1] == '"' && !bytes.ContainsAny(b[1:n-1], `\"`) {
		return a.parseSigned(string(b[1 : n-1])) // no escapes: the literal is the string
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return ErrFormat
	}
	return a.parseSigned(s)
}

func (a *Amount) parseSigned(s string) error {
	neg := strings.HasPrefix(s, "-")
	v, err := Parse(strings.TrimPrefix(s, "-"))
	if err != nil {
		return err
	}
	if neg {
		v = -v
	}
	*a = v
	return nil
}

// Fee is amount × bps / 10000 rounded half up to the minor unit (the one
// rounding rule for platform fees).
func Fee(amount Amount, bps int) Amount {
	if amount <= 0 || bps <= 0 {
		return 0
	}
	n := int64(amount) * int64(bps)
	return Amount((n + 5000) / 10000)
}
