package wallet

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"deckhand/control/money"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// The invoice list's filter: a JSON object mapping a field to either a
// value (equality) or an object of operators, all of which must hold:
// {"status":"paid","amount":{"gte":"10","lt":100},"invoice_number":{"like":"INV-2026-%"}}.
// The operators are the store's (eq ne gt gte lt lte like in): like takes
// SQL wildcards (% any run, _ one character, \ escapes), ignoring ASCII
// case; in takes an array. Amounts are numbers or decimal strings, dates
// RFC 3339 times or YYYY-MM-DD days. The parser only turns JSON into the
// store's conditions over invoiceTable; the store checks fields and
// operators and answers the page.

type fieldKind int

const (
	kindString fieldKind = iota
	kindAmount
	kindTime
)

// invoiceFields are the filterable (and sortable) invoice fields.
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

func filterErr(rule string, args ...any) error {
	return fault.Invalid("filter", rule, args...)
}

// filterError names the filter parameter for a condition the store
// refused.
func filterError(err error) error {
	var qe *store.QueryError
	if errors.As(err, &qe) {
		return filterErr("%s: %s", qe.Field, qe.Rule)
	}
	return err
}

// parseFilter reads the filter parameter as store conditions; "" is none.
func parseFilter(raw string) ([]store.Filter, error) {
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
	var out []store.Filter
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
			out = append(out, store.Where(field, store.Eq, v))
			continue
		}
		var ops map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ops); err != nil {
			return nil, filterErr("%s: must be a value or an object of operators", field)
		}
		if len(ops) == 0 {
			return nil, filterErr("%s: names no operator; operators: %s", field, opNames())
		}
		opNames := make([]string, 0, len(ops))
		for k := range ops {
			opNames = append(opNames, k)
		}
		sort.Strings(opNames)
		for _, op := range opNames {
			f, err := parseCond(field, kind, store.Op(op), bytes.TrimSpace(ops[op]))
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	return out, nil
}

func opNames() string {
	s := make([]string, len(store.Ops))
	for i, o := range store.Ops {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

func parseCond(field string, kind fieldKind, op store.Op, raw []byte) (store.Filter, error) {
	switch op {
	case store.Like:
		var pat string
		if err := json.Unmarshal(raw, &pat); err != nil {
			return store.Filter{}, filterErr("%s.like: must be a string pattern (%% any run, _ one character)", field)
		}
		return store.Where(field, op, pat), nil
	case store.In:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return store.Filter{}, filterErr("%s.in: must be an array of values", field)
		}
		if len(items) > 100 {
			return store.Filter{}, filterErr("%s.in: at most 100 values", field)
		}
		vals := make([]any, 0, len(items))
		for _, it := range items {
			v, err := parseValue(field, kind, bytes.TrimSpace(it))
			if err != nil {
				return store.Filter{}, err
			}
			vals = append(vals, v)
		}
		return store.Where(field, op, vals), nil
	case store.Eq, store.Ne, store.Gt, store.Gte, store.Lt, store.Lte:
		v, err := parseValue(field, kind, raw)
		if err != nil {
			return store.Filter{}, err
		}
		return store.Where(field, op, v), nil
	}
	return store.Filter{}, filterErr("%s: unknown operator %q; operators: %s", field, op, opNames())
}

// parseValue reads one JSON value as the store value of field: a string,
// cents (int64) for amounts, a time for dates, nil for null.
func parseValue(field string, kind fieldKind, raw []byte) (any, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	switch kind {
	case kindAmount:
		s := string(raw)
		if len(raw) > 0 && raw[0] == '"' {
			_ = json.Unmarshal(raw, &s)
		}
		a, err := money.Parse(s)
		if err != nil {
			return nil, filterErr("%s: must be an amount with at most 2 decimals (number or decimal string), got %s", field, raw)
		}
		return int64(a), nil
	case kindTime:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, filterErr("%s: must be a date string (RFC 3339 or YYYY-MM-DD)", field)
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t, nil
			}
		}
		return nil, filterErr("%s: must be a date string (RFC 3339 or YYYY-MM-DD), got %q", field, s)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, filterErr("%s: must be a string", field)
	}
	return s, nil
}
