package platform

import (
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"deckhand/platform/fault"

	"github.com/gofiber/fiber/v3"
)

// Query parameters are declared once in a route's table entry (Route.Query)
// and parsed there, before the handler runs: the host turns every declared
// query parameter into a typed value or answers 400 INVALID naming it, so a
// handler reads values that already passed their rules (QueryOf(c).Int("limit")).
//
// Grammar, the same on every service:
//   - "integer": optional sign and decimal digits (no spaces, no 0x, no 1e3).
//   - "number": a finite decimal float (strconv.ParseFloat, NaN and ±Inf refused).
//   - "boolean": exactly true, false, 1 or 0 (lower case). Anything else —
//     yes, on, TRUE, an empty value — is refused, so a typo never silently
//     means false.
//   - "string": any value; Enum restricts it to listed words (case-sensitive).
//   - A parameter given with an empty value (?limit=) counts as absent, except
//     for booleans; a parameter given twice is refused (which one wins would
//     differ between proxies).
//   - Parameters a route does not declare are ignored (cache busters such as
//     ?_=1700000000 pass).

// Param documents a query, path or header parameter.
type Param struct {
	Name        string
	In          string // "query" (default), "path", "header", "cookie"
	Description string
	Required    bool
	Type        string // "string" (default), "integer", "number", "boolean"
	Enum        []string
	// Range bounds an integer or number (by the grammar below).
	Range *Range
	// Default is the value an absent parameter takes, in query syntax.
	Default string
	// MinLength, MaxLength (characters; 0: no bound) and Pattern (an RE2
	// expression the whole value must match) restrict a string.
	MinLength, MaxLength int
	Pattern              string
	// Format is the OpenAPI format shown for the value (uuid, date-time ...).
	Format string
}

// Range bounds a numeric parameter. Min and Max are inclusive unless the
// matching Exclusive flag is set (scale is Range{Min: 0, ExclusiveMin: true,
// Max: 1}: 0 < scale <= 1). Use math.Inf for an open end.
type Range struct {
	Min, Max                   float64
	ExclusiveMin, ExclusiveMax bool
}

// Query holds a request's declared query parameters, parsed and checked.
type Query struct {
	vals map[string]any
}

type queryKey struct{}

// QueryOf is the parsed query of a Fiber route's request. Accessors answer
// the declared Default (or the zero value) for an absent parameter.
func QueryOf(c fiber.Ctx) Query {
	q, _ := c.RequestCtx().UserValue(queryKey{}).(Query)
	return q
}

// QueryFrom is QueryOf for a Route.HTTP handler: the host's adaptor passes
// the parsed query in the request's context.
func QueryFrom(ctx context.Context) Query {
	q, _ := ctx.Value(queryKey{}).(Query)
	return q
}

// Has reports whether the parameter was given (or has a Default).
func (q Query) Has(name string) bool { _, ok := q.vals[name]; return ok }

// String is a string (or enum) parameter.
func (q Query) String(name string) string { s, _ := q.vals[name].(string); return s }

// Int is an integer parameter.
func (q Query) Int(name string) int64 { n, _ := q.vals[name].(int64); return n }

// Float is a number parameter.
func (q Query) Float(name string) float64 { f, _ := q.vals[name].(float64); return f }

// Bool is a boolean parameter.
func (q Query) Bool(name string) bool { b, _ := q.vals[name].(bool); return b }

// QueryParams are the parameters of ps that live in the query string.
func QueryParams(ps []Param) []Param {
	var out []Param
	for _, p := range ps {
		if p.In == "" || p.In == "query" {
			out = append(out, p)
		}
	}
	return out
}

// ParseQuery checks raw query values against declared parameters and
// returns their typed values; the first broken rule is an INVALID error
// naming the parameter. get returns every value given for a name.
func ParseQuery(params []Param, get func(name string) []string) (Query, error) {
	q := Query{vals: make(map[string]any, len(params))}
	for _, p := range params {
		vs := get(p.Name)
		if len(vs) > 1 {
			return Query{}, queryErr(p, "must be given at most once")
		}
		raw := ""
		if len(vs) == 1 {
			raw = vs[0]
		}
		v, ok, err := paramValue(p, raw, len(vs) == 1, false)
		if err != nil {
			return Query{}, err
		}
		if ok {
			q.vals[p.Name] = v
		}
	}
	return q, nil
}

// paramValue is p's value from raw, its text (given: the request named it;
// rest: it is a trailing {name...}, which may be empty), or its default
// when it is not given; ok is false when it has neither.
func paramValue(p Param, raw string, given, rest bool) (v any, ok bool, err error) {
	if given && raw == "" && p.Type != "boolean" && !rest {
		given = false
	}
	if !given {
		if p.Required {
			return nil, false, queryErr(p, "is required")
		}
		if p.Default == "" {
			return nil, false, nil
		}
		raw = p.Default
	}
	v, err = parseParam(p, raw)
	return v, err == nil, err
}

func parseParam(p Param, raw string) (any, error) {
	switch p.Type {
	case "integer":
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || !p.Range.holds(float64(n)) {
			return nil, queryErr(p, "must be an integer"+p.Range.describe())
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || !p.Range.holds(f) {
			return nil, queryErr(p, "must be a number"+p.Range.describe())
		}
		return f, nil
	case "boolean":
		switch raw {
		case "true", "1":
			return true, nil
		case "false", "0":
			return false, nil
		}
		return nil, queryErr(p, "must be true, false, 1 or 0")
	}
	if len(p.Enum) > 0 {
		if !slices.Contains(p.Enum, raw) {
			return nil, queryErr(p, "must be one of "+strings.Join(p.Enum, ", "))
		}
		return raw, nil
	}
	if rule := stringRule(raw, p.MinLength, p.MaxLength, p.Pattern); rule != "" {
		return nil, queryErr(p, rule)
	}
	return raw, nil
}

// stringRule is the rule of minLength, maxLength (in characters) and
// pattern that s breaks, "" when it keeps them all.
func stringRule(s string, minLen, maxLen int, pattern string) string {
	if minLen > 0 || maxLen > 0 {
		n := utf8.RuneCountInString(s)
		switch {
		case minLen > 0 && maxLen > 0 && (n < minLen || n > maxLen):
			return "must be " + strconv.Itoa(minLen) + " to " + strconv.Itoa(maxLen) + " characters, got " + strconv.Itoa(n)
		case minLen > 0 && n < minLen:
			return "must be at least " + strconv.Itoa(minLen) + " characters, got " + strconv.Itoa(n)
		case maxLen > 0 && n > maxLen:
			return "must be at most " + strconv.Itoa(maxLen) + " characters, got " + strconv.Itoa(n)
		}
	}
	if pattern != "" && !compiled(pattern).MatchString(s) {
		return "must match " + pattern
	}
	return ""
}

// patterns caches compiled patterns: a route table's are compiled when its
// host is built (checkParams, planInput), so a request never compiles one.
var patterns sync.Map // string → *regexp.Regexp

func compiled(pattern string) *regexp.Regexp {
	if re, ok := patterns.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(pattern)
	patterns.Store(pattern, re)
	return re
}

// paramPlace is how an error names where a parameter was given.
func paramPlace(in string) string {
	switch in {
	case "path":
		return "path parameter "
	case "header":
		return "header "
	case "cookie":
		return "cookie "
	case "argument":
		return "argument " // a tool's (tool.go)
	}
	return "query parameter "
}

func queryErr(p Param, rule string) *fault.Error {
	return &fault.Error{Code: fault.CodeInvalid, Field: p.Name, Details: p.Name,
		Message: paramPlace(p.In) + p.Name + ": " + rule}
}

func (r *Range) holds(v float64) bool {
	if r == nil {
		return true
	}
	if v < r.Min || (r.ExclusiveMin && v == r.Min) {
		return false
	}
	return v < r.Max || (!r.ExclusiveMax && v == r.Max)
}

// describe is the bound in words: " from 1 to 1000", " above 0 and at most 1".
func (r *Range) describe() string {
	if r == nil {
		return ""
	}
	var parts []string
	if !math.IsInf(r.Min, -1) {
		if r.ExclusiveMin {
			parts = append(parts, "above "+fmtNum(r.Min))
		} else {
			parts = append(parts, "at least "+fmtNum(r.Min))
		}
	}
	if !math.IsInf(r.Max, 1) {
		if r.ExclusiveMax {
			parts = append(parts, "below "+fmtNum(r.Max))
		} else {
			parts = append(parts, "at most "+fmtNum(r.Max))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " and ")
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
