// Package openapi derives OpenAPI 3.0 schemas from Go types through their
// json tags and the binder's tags, collects a document's named schemas as
// components, and renders a document as JSON and YAML. The platform's host
// builds its services' documents from their route tables with it.
package openapi

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Builder collects the named schemas of one document: each Go type
// becomes one component (Receipt, Entry ...), referenced wherever it
// occurs. A nil Builder derives standalone schemas (no references).
type Builder struct {
	Schemas map[string]any
	names   map[reflect.Type]string
	owner   map[string]reflect.Type
}

// NewBuilder is a Builder for one document.
func NewBuilder() *Builder {
	return &Builder{Schemas: map[string]any{}, names: map[reflect.Type]string{}, owner: map[string]reflect.Type{}}
}

var (
	timeType          = reflect.TypeOf(time.Time{})
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	schemaProvider    = reflect.TypeFor[SchemaProvider]()
)

// SchemaProvider is a type with its own JSON encoding (a value of several
// forms, a decimal string) that states its schema instead of the one its
// fields or kind would give.
type SchemaProvider interface {
	JSONSchema() map[string]any
}

// Schema derives a standalone JSON schema (no references) from a Go value
// through its json tags. The tags the binder checks (bind.go) are shown:
// `required:"true"` lists the field as required, `doc:"..."` describes it,
// `enum:"a,b"`, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// minLength, maxLength, pattern, minItems, maxItems, format and default
// restrict or describe it; a pointer field is nullable.
func Schema(v any) map[string]any {
	return (*Builder)(nil).SchemaOf(reflect.TypeOf(v))
}

// SchemaOf is t's schema; in a document (d not nil) a named struct type is
// a reference to its component.
func (d *Builder) SchemaOf(t reflect.Type) map[string]any {
	return d.schema(t, map[reflect.Type]bool{})
}

func (d *Builder) schema(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if reflect.PointerTo(t).Implements(schemaProvider) {
		return reflect.New(t).Interface().(SchemaProvider).JSONSchema()
	}
	if t == rawMessageType {
		return map[string]any{}
	}
	if t.Kind() != reflect.Struct {
		if reflect.PointerTo(t).Implements(jsonMarshalerType) {
			return map[string]any{}
		}
		if reflect.PointerTo(t).Implements(textMarshalerType) {
			return map[string]any{"type": "string"}
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": d.schema(t.Elem(), seen)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": d.schema(t.Elem(), seen)}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if d != nil && t.Name() != "" {
			return map[string]any{"$ref": "#/components/schemas/" + d.component(t)}
		}
		if seen[t] {
			return map[string]any{"type": "object"}
		}
		seen[t] = true
		defer delete(seen, t)
		return d.structSchema(t, seen)
	}
	return map[string]any{}
}

// component is the name of t's component, built on first use.
func (d *Builder) component(t reflect.Type) string {
	if name, ok := d.names[t]; ok {
		return name
	}
	name := componentName(t, false)
	if other, taken := d.owner[name]; taken && other != t {
		name = componentName(t, true)
		for i := 2; d.owner[name] != nil; i++ {
			name = componentName(t, true) + strconv.Itoa(i)
		}
	}
	d.names[t], d.owner[name] = name, t
	d.Schemas[name] = map[string]any{"type": "object"} // a placeholder while its fields refer back to it
	d.Schemas[name] = d.structSchema(t, map[reflect.Type]bool{t: true})
	return name
}

// componentName is a Go type's name as a component: Receipt, PageEntry for
// Page[Entry]; qualified, with its package (WalletEntry), when two types
// of one document share a name.
func componentName(t reflect.Type, qualified bool) string {
	name := t.Name()
	var b strings.Builder
	if qualified {
		pkg := t.PkgPath()
		b.WriteString(UpperFirst(pkg[strings.LastIndexByte(pkg, '/')+1:]))
	}
	base, args, generic := strings.Cut(name, "[")
	b.WriteString(base)
	if generic {
		for _, a := range strings.Split(strings.TrimSuffix(args, "]"), ",") {
			a = a[strings.LastIndexAny(a, "./")+1:]
			b.WriteString(UpperFirst(a))
		}
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			return r
		}
		return -1
	}, b.String())
}

func (d *Builder) structSchema(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	props := map[string]any{}
	var required []string
	d.addStructFields(t, props, &required, seen)
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	return s
}

func (d *Builder) addStructFields(t reflect.Type, props map[string]any, required *[]string, seen map[reflect.Type]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, embedded := JSONName(f)
		if embedded {
			d.addStructFields(f.Type, props, required, seen)
			continue
		}
		if name == "" {
			continue
		}
		s := d.schema(f.Type, seen)
		if ref, ok := s["$ref"]; ok {
			s = map[string]any{"$ref": ref} // a copy: a reference stands alone
		}
		fieldTags(f, s)
		props[name] = s
		if f.Tag.Get("required") == "true" {
			*required = append(*required, name)
		}
	}
}

// fieldTags shows a field's tags on its schema s. A reference cannot carry
// siblings in OpenAPI 3.0, so a nullable or described reference becomes
// allOf: [the reference].
func fieldTags(f reflect.StructField, s map[string]any) {
	if _, isRef := s["$ref"]; isRef {
		nullable := f.Type.Kind() == reflect.Pointer
		doc := f.Tag.Get("doc")
		if !nullable && doc == "" {
			return
		}
		s["allOf"] = []any{map[string]any{"$ref": s["$ref"]}}
		delete(s, "$ref")
		if nullable {
			s["nullable"] = true
		}
		if doc != "" {
			s["description"] = doc
		}
		return
	}
	if d := f.Tag.Get("doc"); d != "" {
		s["description"] = d
	}
	if e := f.Tag.Get("enum"); e != "" {
		s["enum"] = strings.Split(e, ",")
	}
	if f.Type.Kind() == reflect.Pointer {
		s["nullable"] = true
	}
	for _, k := range []string{"format", "pattern"} {
		if v := f.Tag.Get(k); v != "" {
			s[k] = v
		}
	}
	for _, k := range []string{"minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"} {
		if v := f.Tag.Get(k); v != "" {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				s[k] = x
			}
		}
	}
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		if v := f.Tag.Get(k); v != "" {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				s[strings.ToLower(k[9:10])+k[10:]] = x // minimum / maximum, OpenAPI 3.0's way
				s[k] = true
			}
		}
	}
	if v := f.Tag.Get("default"); v != "" {
		var x any
		if json.Unmarshal([]byte(v), &x) != nil || s["type"] == "string" {
			x = v
		}
		s["default"] = x
	}
}

// UpperFirst is s with its first letter in upper case.
func UpperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// JSONName is the name a field has in JSON ("" when it has none there);
// embedded says it is an untagged embedded struct whose fields JSON
// flattens into its parent's.
func JSONName(f reflect.StructField) (name string, embedded bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ = strings.Cut(tag, ",")
	if f.Anonymous && name == "" {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && f.Type.Kind() != reflect.Pointer {
			return "", true
		}
	}
	if !f.IsExported() {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}
