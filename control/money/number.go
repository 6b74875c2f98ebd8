package money

import (
	"encoding/json"
	"strings"
)

// Number is an Amount that travels as a JSON number with two decimals
// (12.50) instead of a string: the interface types image and server
// prices, price_paid and remaining_balance as numbers. It is still exact:
// the digits are written from the minor units, never through a float.
type Number Amount

// MarshalJSON writes the amount as a JSON number literal.
func (n Number) MarshalJSON() ([]byte, error) { return Amount(n).appendTo(make([]byte, 0, 24)), nil }

// UnmarshalJSON reads a number (or a decimal string) under Parse's rule;
// a leading minus is accepted for amounts written by MarshalJSON.
func (n *Number) UnmarshalJSON(b []byte) error {
	var a Amount
	s := strings.Trim(string(b), `"`)
	if err := json.Unmarshal([]byte(`"`+s+`"`), &a); err != nil {
		return err
	}
	*n = Number(a)
	return nil
}

// ParseNumber reads a JSON number under Parse's rule (non-negative, at most
// two decimals, no exponent).
func ParseNumber(n json.Number) (Amount, error) { return Parse(string(n)) }

// JSONSchema is a Number's schema in OpenAPI documents: a number with at
// most two decimals (never an integer, whatever its Go kind).
func (Number) JSONSchema() map[string]any {
	return map[string]any{"type": "number", "multipleOf": 0.01, "example": 12.5,
		"description": "amount of money: a number with at most two decimals"}
}
