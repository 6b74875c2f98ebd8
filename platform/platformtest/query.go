package platformtest

import (
	"encoding/json"
	"io"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"deckhand/platform"
	"deckhand/platform/fault"
)

// CheckQueryValidation sends, for every query parameter every route of h
// declares, each value that breaks its declared rules (not an integer,
// outside its range, not a boolean, not in its enum, missing when
// required), the other parameters valid, and fails the test unless the
// answer is 400 INVALID naming that parameter. It returns how many bad
// requests it sent, so a caller can insist the table declares some.
func CheckQueryValidation(t testing.TB, h *platform.Host) int {
	t.Helper()
	sent := 0
	for _, r := range h.Routes() {
		params := platform.QueryParams(r.Params())
		if len(params) == 0 {
			continue
		}
		method := r.Method
		if method == platform.MethodAny {
			method = "GET"
		}
		path := pathVar.ReplaceAllString(r.Path, "x")
		for i, p := range params {
			for _, bad := range badValues(p) {
				q := url.Values{}
				for j, o := range params {
					if j != i {
						q.Set(o.Name, validValue(o))
					}
				}
				if bad != nil {
					q.Set(p.Name, *bad)
				}
				target := path + "?" + q.Encode()
				resp, err := h.App().Test(NewRequest(method, target, nil))
				if err != nil {
					t.Fatalf("%s %s: %v", method, target, err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				sent++
				var body fault.ContainerError
				_ = json.Unmarshal(raw, &body)
				if resp.StatusCode != 400 || body.Code != fault.CodeInvalid || body.Details != p.Name || !strings.Contains(body.Message, p.Name) {
					t.Errorf("%s %s: %d %s; want 400 INVALID naming %q", method, target, resp.StatusCode, raw, p.Name)
				}
			}
		}
	}
	return sent
}

var pathVar = regexp.MustCompile(`\{[^}]*\}`)

// badValues are the values that break p's rules; nil stands for leaving a
// required parameter out.
func badValues(p platform.Param) []*string {
	var out []*string
	if p.Required {
		out = append(out, nil)
	}
	switch p.Type {
	case "integer":
		out = append(out, new("ten"), new("1.5"))
	case "number":
		out = append(out, new("ten"), new("NaN"))
	case "boolean":
		out = append(out, new("yes"), new("TRUE"))
	default:
		if len(p.Enum) > 0 {
			out = append(out, new("not-"+p.Enum[0]))
		}
		if p.Format == "date-time" {
			out = append(out, new("yesterday"))
		}
		if p.MinLength > 1 {
			out = append(out, new("a"))
		}
		if p.MaxLength > 0 {
			out = append(out, new(strings.Repeat("a", p.MaxLength+1)))
		}
	}
	if r := p.Range; r != nil {
		if !math.IsInf(r.Min, -1) {
			v := r.Min
			if !r.ExclusiveMin {
				v = r.Min - 1
				if p.Type == "number" {
					v = math.Nextafter(r.Min, math.Inf(-1))
				}
			}
			out = append(out, new(num(v)))
		}
		if !math.IsInf(r.Max, 1) {
			v := r.Max
			if !r.ExclusiveMax {
				v = r.Max + 1
			}
			out = append(out, new(num(v)))
		}
	}
	return out
}

// validValue is a value that passes p's rules.
func validValue(p platform.Param) string {
	if p.Default != "" {
		return p.Default
	}
	if len(p.Enum) > 0 {
		return p.Enum[0]
	}
	switch p.Type {
	case "boolean":
		return "true"
	case "integer", "number":
		r := p.Range
		if r == nil {
			return "1"
		}
		if !math.IsInf(r.Min, -1) {
			switch {
			case !r.ExclusiveMin:
				return num(r.Min)
			case p.Type == "integer":
				return num(r.Min + 1)
			}
			return num(math.Min(r.Min+1, (r.Min+r.Max)/2))
		}
		if !math.IsInf(r.Max, 1) {
			return num(r.Max - 1)
		}
		return "1"
	}
	if p.Format == "date-time" {
		return "2026-01-02T15:04:05Z"
	}
	if p.MinLength > 1 {
		return strings.Repeat("x", p.MinLength)
	}
	return "x"
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
