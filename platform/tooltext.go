package platform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"unicode/utf8"
)

// ToolText is a route tool's Text, parsed: how the operation's answer
// reads for a model. It is a text/template over the answer as JSON (the
// members by their JSON names, whole numbers as integers), with these
// functions besides the template language's own:
//
//	arg NAME        the call's argument NAME: a string as it is, anything
//	                else as its JSON ("" when not given)
//	join LIST SEP   a list's items joined with SEP
//	indent N        N times two spaces
//	runes S         the number of characters of S
//	repeat S N      S N times
//	add A B         the sum of two whole numbers
//	line S          S ended by a line break unless it is empty or ends
//	                so, for what follows to start a line of its own
//
// A member a template names that the answer lacks (an empty omitempty
// one) is nothing to with, if and range.
type ToolText struct{ t *template.Template }

var toolTextFuncs = template.FuncMap{
	"arg":    func(string) string { return "" }, // bound per call
	"join":   joinItems,
	"indent": func(n int64) string { return strings.Repeat("  ", int(max(n, 0))) },
	"runes":  utf8.RuneCountInString,
	"repeat": func(s string, n any) string { return strings.Repeat(s, max(whole(n), 0)) },
	"add":    func(a, b any) int { return whole(a) + whole(b) },
	"line": func(s string) string {
		if s == "" || strings.HasSuffix(s, "\n") {
			return s
		}
		return s + "\n"
	},
}

// whole is a template's number (a JSON one, or a range's index) as an
// int; anything else is 0.
func whole(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

// ParseToolText parses a Tool's Text.
func ParseToolText(name, src string) (*ToolText, error) {
	t, err := template.New(name).Funcs(toolTextFuncs).Parse(src)
	if err != nil {
		return nil, err
	}
	return &ToolText{t: t}, nil
}

// Render is the text of an answer (its JSON) for a call with args.
func (x *ToolText) Render(answer []byte, args map[string]json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	t, err := x.t.Clone()
	if err != nil {
		return "", err
	}
	t.Funcs(template.FuncMap{"arg": func(name string) string {
		raw := args[name]
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	}})
	var b strings.Builder
	if err := t.Execute(&b, numbers(v)); err != nil {
		return "", err
	}
	return b.String(), nil
}

// numbers turns the JSON numbers of v into int64 (whole ones) or
// float64, so a template prints 40960 as 40960 and %d takes it.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// joinItems joins a JSON list's items (nothing for null).
func joinItems(v any, sep string) string {
	list, _ := v.([]any)
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = fmt.Sprint(e)
	}
	return strings.Join(parts, sep)
}
