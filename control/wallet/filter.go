package wallet

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"time"

	"deckhand/control/money"
	"deckhand/platform"
)

// The invoice list's filter: a JSON object mapping a sortable field to
// either a value (equality) or an object of operators, all of which must
// hold: {"status":"paid","amount":{"gte":"10","lt":100},"invoice_number":{"like":"INV-2026-%"}}.
// Operators: eq ne gt gte lt lte like in. like takes SQL wildcards (% any
// run, _ one character), case-insensitive; in takes an array. Amounts are
// numbers or decimal strings, dates RFC 3339 times or YYYY-MM-DD days.

var filterOps = []string{"eq", "ne", "gt", "gte", "lt", "lte", "like", "in"}

type fieldKind int

const (
	kindString fieldKind = iota
	kindAmount
	kindTime
)

// invoiceFields are the sortable (and filterable) invoice fields.
var invoiceFields = map[string]fieldKind{
	"id": kindString, "invoice_number": kindString, "status": kindString, "amount": kindAmount, "currency": kindString,
	"issue_date": kindTime, "due_date": kindTime, "paid_date": kindTime, "created_at": kindTime, "updated_at": kindTime,
	"user_id": kindString, "transaction_id": kindString,
}

func fieldNames() string {
	var n []string
	for k := range invoiceFields {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// value is one comparable field value: s for strings, n for amounts and
// times (cents, Unix nanoseconds); null for an absent paid_date.
type value struct {
	s    string
	n    int64
	null bool
}

func (inv *Invoice) field(name string) value {
	switch name {
	case "id":
		return value{s: inv.ID}
	case "invoice_number":
		return value{s: inv.InvoiceNumber}
	case "status":
		return value{s: inv.Status}
	case "currency":
		return value{s: inv.Currency}
	case "user_id":
		return value{s: inv.UserID}
	case "transaction_id":
		return value{s: inv.TransactionID}
	case "amount":
		return value{n: int64(inv.Amount), s: money.Amount(inv.Amount).String()}
	case "issue_date":
		return timeValue(inv.IssueDate)
	case "due_date":
		return timeValue(inv.DueDate)
	case "paid_date":
		if inv.PaidDate == nil {
			return value{null: true}
		}
		return timeValue(*inv.PaidDate)
	case "created_at":
		return timeValue(inv.CreatedAt)
	case "updated_at":
		return timeValue(inv.UpdatedAt)
	}
	return value{null: true}
}

func timeValue(t time.Time) value {
	return value{n: t.UnixNano(), s: t.UTC().Format(time.RFC3339Nano)}
}

// cond is one parsed condition.
type cond struct {
	field string
	op    string
	vals  []value
	re    *regexp.Regexp
}

type invoiceFilter []cond

func filterErr(rule string, args ...any) error {
	return platform.Invalid("filter", rule, args...)
}

// parseFilter reads the filter parameter; "" is no filter.
func parseFilter(raw string) (invoiceFilter, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, filterErr("must be a JSON object such as {\"status\":{\"eq\":\"paid\"}}")
	}
	if dec.More() {
		return nil, filterErr("must be a single JSON object")
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var out invoiceFilter
	for _, field := range names {
		kind, ok := invoiceFields[field]
		if !ok {
			return nil, filterErr("unknown field %q; fields: %s", field, fieldNames())
		}
		raw := bytes.TrimSpace(m[field])
		if len(raw) > 0 && raw[0] != '{' {
			v, err := parseValue(field, kind, raw)
			if err != nil {
				return nil, err
			}
			out = append(out, cond{field: field, op: "eq", vals: []value{v}})
			continue
		}
		var ops map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ops); err != nil {
			return nil, filterErr("%s: must be a value or an object of operators", field)
		}
		if len(ops) == 0 {
			return nil, filterErr("%s: names no operator; operators: %s", field, strings.Join(filterOps, ", "))
		}
		opNames := make([]string, 0, len(ops))
		for k := range ops {
			opNames = append(opNames, k)
		}
		sort.Strings(opNames)
		for _, op := range opNames {
			c, err := parseCond(field, kind, op, bytes.TrimSpace(ops[op]))
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func parseCond(field string, kind fieldKind, op string, raw []byte) (cond, error) {
	c := cond{field: field, op: op}
	switch op {
	case "eq", "ne", "gt", "gte", "lt", "lte":
		v, err := parseValue(field, kind, raw)
		if err != nil {
			return c, err
		}
		c.vals = []value{v}
	case "like":
		var pat string
		if err := json.Unmarshal(raw, &pat); err != nil {
			return c, filterErr("%s.like: must be a string pattern (%% any run, _ one character)", field)
		}
		var b strings.Builder
		b.WriteString("(?is)^")
		for _, r := range pat {
			switch r {
			case '%':
				b.WriteString(".*")
			case '_':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		b.WriteString("$")
		c.re = regexp.MustCompile(b.String())
	case "in":
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return c, filterErr("%s.in: must be an array of values", field)
		}
		if len(items) > 100 {
			return c, filterErr("%s.in: at most 100 values", field)
		}
		for _, it := range items {
			v, err := parseValue(field, kind, bytes.TrimSpace(it))
			if err != nil {
				return c, err
			}
			c.vals = append(c.vals, v)
		}
	default:
		return c, filterErr("%s: unknown operator %q; operators: %s", field, op, strings.Join(filterOps, ", "))
	}
	return c, nil
}

func parseValue(field string, kind fieldKind, raw []byte) (value, error) {
	if string(raw) == "null" {
		return value{null: true}, nil
	}
	switch kind {
	case kindAmount:
		s := string(raw)
		if len(raw) > 0 && raw[0] == '"' {
			_ = json.Unmarshal(raw, &s)
		}
		a, err := money.Parse(s)
		if err != nil {
			return value{}, filterErr("%s: must be an amount with at most 2 decimals (number or decimal string), got %s", field, raw)
		}
		return value{n: int64(a), s: a.String()}, nil
	case kindTime:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return value{}, filterErr("%s: must be a date string (RFC 3339 or YYYY-MM-DD)", field)
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
			if t, err := time.Parse(layout, s); err == nil {
				return timeValue(t), nil
			}
		}
		return value{}, filterErr("%s: must be a date string (RFC 3339 or YYYY-MM-DD), got %q", field, s)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return value{}, filterErr("%s: must be a string", field)
	}
	return value{s: s}, nil
}

func compare(kind fieldKind, a, b value) int {
	if kind == kindString {
		return strings.Compare(a.s, b.s)
	}
	switch {
	case a.n < b.n:
		return -1
	case a.n > b.n:
		return 1
	}
	return 0
}

// match reports whether inv meets every condition.
func (f invoiceFilter) match(inv *Invoice) bool {
	for _, c := range f {
		kind := invoiceFields[c.field]
		v := inv.field(c.field)
		if !c.holds(kind, v) {
			return false
		}
	}
	return true
}

func (c cond) holds(kind fieldKind, v value) bool {
	if c.op == "like" {
		return !v.null && c.re.MatchString(v.s)
	}
	if c.op == "in" {
		for _, w := range c.vals {
			if w.null == v.null && (v.null || compare(kind, v, w) == 0) {
				return true
			}
		}
		return false
	}
	w := c.vals[0]
	if v.null || w.null {
		eq := v.null == w.null
		switch c.op {
		case "eq":
			return eq
		case "ne":
			return !eq
		}
		return false
	}
	r := compare(kind, v, w)
	switch c.op {
	case "eq":
		return r == 0
	case "ne":
		return r != 0
	case "gt":
		return r > 0
	case "gte":
		return r >= 0
	case "lt":
		return r < 0
	case "lte":
		return r <= 0
	}
	return false
}
