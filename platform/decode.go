package platform

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"

	"deckhand/platform/fault"
)

// Validator is implemented by request structs; Validate returns an *Error
// (usually from Invalid) naming the field and the rule it broke.
type Validator interface {
	Validate() error
}

// DecodeBytes reads a JSON body into dst strictly: unknown fields, wrong
// types, trailing data and malformed JSON are 400s that name the field. An
// empty body decodes as {}. When dst implements Validator, Validate runs
// last, so a method sees only valid input. The binder decodes every typed
// body this way; a handler calls it for a body it must look at first (a
// batch whose items are typed by a discriminator).
func DecodeBytes(body []byte, dst any) error {
	if err := decodeStrict(body, dst); err != nil {
		return err
	}
	if v, ok := dst.(Validator); ok {
		return v.Validate()
	}
	return nil
}

// decodeStrict is DecodeBytes without Validate.
func decodeStrict(body []byte, dst any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err, reflect.TypeOf(dst))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &fault.Error{Code: fault.CodeInvalid, Message: "body: unexpected data after the JSON value", Details: "body"}
	}
	return nil
}

func jsonError(err error, dst reflect.Type) error {
	var pe *fault.Error
	if errors.As(err, &pe) {
		return pe // a type's own UnmarshalJSON named the rule
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &fault.Error{Code: fault.CodeInvalid, Message: "body: malformed JSON near offset " + itoa(int(syn.Offset)), Details: "body"}
	case errors.As(err, &typ):
		field := cmp.Or(jsonPath(dst, typ.Field), "body")
		return &fault.Error{Code: fault.CodeInvalid, Field: field, Details: field,
			Message: field + ": must be " + jsonKind(typ.Type.Kind().String()) + ", got " + typ.Value}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &fault.Error{Code: fault.CodeInvalid, Message: "body: truncated JSON", Details: "body"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &fault.Error{Code: fault.CodeInvalid, Field: field, Details: field, Message: field + ": unknown field"}
	}
	return &fault.Error{Code: fault.CodeInvalid, Message: "body: invalid JSON", Details: "body"}
}

// jsonPath is encoding/json's path of a field without the Go names of the
// embedded structs it passes through (Spec.cmd is the body's cmd).
func jsonPath(t reflect.Type, path string) string {
	if path == "" {
		return ""
	}
	var out []string
	for _, seg := range strings.Split(path, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(seg); ok && f.Anonymous {
				t = f.Type
				continue
			}
			t = fieldByJSONName(t, seg)
		} else {
			t = nil
		}
		out = append(out, seg)
	}
	return strings.Join(out, ".")
}

// fieldByJSONName is the type of t's field (promoted ones included) whose
// JSON name is name, or nil.
func fieldByJSONName(t reflect.Type, name string) reflect.Type {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && tag == "":
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if got := fieldByJSONName(ft, name); got != nil {
					return got
				}
			}
		case tag == name || (tag == "" && f.Name == name):
			return f.Type
		}
	}
	return nil
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "float32", "float64":
		return "a number"
	}
	if strings.HasPrefix(k, "int") || strings.HasPrefix(k, "uint") {
		return "an integer"
	}
	return "a " + k
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
