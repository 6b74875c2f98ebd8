package platform

import (
	"bytes"
	"encoding"
	"io"
	"math"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"

	"deckhand/platform/openapi"
	"github.com/gofiber/fiber/v3"
)

// timeType is a time.Time parameter or field's type.
var timeType = reflect.TypeOf(time.Time{})

// The binder. A route's input is one Go struct whose tags say where each
// field comes from:
//
//	type EntryEdit struct {
//		ID      string      `path:"id" doc:"the entry's id"`
//		IfMatch string      `header:"If-Match" doc:"the crontab's ETag as last read"`
//		DryRun  bool        `query:"dry_run" default:"false"`
//		Body    UpdateEntry // the JSON body
//	}
//
// A field tagged path, query, header or cookie is a parameter; a field
// named Body is the request body (JSON, the raw bytes when it is a []byte,
// or the body as it arrives when it is an io.Reader) unless it has a json
// tag (then it is a member of a JSON body); a pointer Body is documented as
// optional (an absent body decodes as {}). An io.Reader Body is not read by
// the host: the method streams it (an upload larger than memory), and when
// the method fails without reading it to its end the connection is closed
// after the answer, since the unread rest would be taken for the next
// request. The document shows a []byte or io.Reader body as `type: string,
// format: binary` of Route.RequestType. An input
// without parameters is itself the JSON body (TransferInput). Embedded
// structs without tags lend their fields (a shared EntryRef with the path
// parameters). A field of type Peer gets the connection's addresses, one
// of type Target the request's method, Host and scheme. A trailing {name...} path
// parameter is the rest of the path as sent (percent-encoded), empty when
// the request names the prefix itself.
// Mixing parameters with loose body fields is refused when the host is
// built: the body is then a Body field.
//
// Parameters hold string, bool, integer and float kinds, pointers to them
// (nil when absent) and encoding.TextUnmarshaler types; they follow the
// query grammar (query.go) and these tags, which the OpenAPI document shows
// too: doc, required:"true" (path parameters always are), default, enum
// ("a,b"), minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers),
// minLength, maxLength, pattern (strings), format (documentation only).
//
// The body is decoded strictly (Decode); then the body's Validate runs (a
// domain's own rules and codes, such as INVALID_SCHEDULE, come first),
// then the same tags on its fields are checked wherever they sit in it
// (required: not absent or null where Go can tell — pointers, arrays,
// objects; enum, minimum ... on a value that is
// given — a zero value of a field that is not a pointer counts as not
// given — plus minItems and maxItems on arrays), so nothing the document
// promises goes unchecked; last the input's own Validate when the body is
// a field. An input's ValidateParams (ParamsValidator) runs before the
// body is read. The first broken rule is a 400 INVALID naming the
// field (blocks[3].level) and the rule, the message and envelope of every
// other validation error.

// Peer is the connection a request arrived on. An input field of this type
// is filled by the host, never from the request's content, and is not part
// of the OpenAPI document.
type Peer struct {
	RemoteIP net.IP // the socket's peer (not ClientIP: no proxy header is believed here)
	LocalIP  net.IP // the address the request was received on
}

// Target is what a request asked for beyond its parameters: its method
// (for a method shared by several routes, WebDAV's), the Host it named and
// the scheme it came over (a same-origin check compares an Origin header
// with Scheme://Host; a cookie over https is Secure). An input field of
// this type is filled by the host, before ValidateParams runs, and is not
// part of the OpenAPI document (every request has them).
type Target struct {
	Method string
	Host   string
	Scheme string // "https" on a TLS connection, else "http"
}

var (
	targetType          = reflect.TypeFor[Target]()
	peerType            = reflect.TypeFor[Peer]()
	textUnmarshaler     = reflect.TypeFor[encoding.TextUnmarshaler]()
	validatorType       = reflect.TypeFor[Validator]()
	paramsValidatorType = reflect.TypeFor[ParamsValidator]()
	bytesType           = reflect.TypeFor[[]byte]()
	readerType          = reflect.TypeFor[io.Reader]()
)

// inputPlan is how one input type is bound, worked out once per route.
type inputPlan struct {
	typ     reflect.Type
	params  []paramField
	peers   [][]int
	targets [][]int
	body    *bodyPlan
	// validate: the input implements Validator and is not its own body.
	validate bool
	// validateParams: the input implements ParamsValidator.
	validateParams bool
}

// ParamsValidator is implemented by inputs whose parameters have rules of
// their own (an id's syntax): ValidateParams runs once the parameters and
// the Peer and Target fields are bound, before the body is read, so a bad
// path (or a request from another origin) answers before a bad body.
// An embedded reference type (NodeRef) lends it to every input that
// embeds it.
type ParamsValidator interface {
	ValidateParams() error
}

type paramField struct {
	index []int
	p     Param
	typ   reflect.Type // the field's type without its pointer
	ptr   bool
	text  bool // typ's pointer is an encoding.TextUnmarshaler
}

type bodyPlan struct {
	index    []int // nil: the input itself is the body
	typ      reflect.Type
	raw      bool // []byte: the bytes as sent
	stream   bool // io.Reader: the body as it arrives, read by the method
	check    checker
	validate bool
}

// hasBody reports whether the input reads a request body.
func (p *inputPlan) hasBody() bool { return p != nil && p.body != nil }

// binary reports whether the input's body is bytes ([]byte or io.Reader),
// not JSON.
func (p *inputPlan) binary() bool { return p.hasBody() && (p.body.raw || p.body.stream) }

// streams reports whether the method reads the body itself (io.Reader).
func (p *inputPlan) streams() bool { return p.hasBody() && p.body.stream }

// planInput works out how t is bound; it panics on a type that cannot be
// (a programming error that surfaces when the host is built).
func planInput(t reflect.Type) *inputPlan {
	if t.Kind() != reflect.Struct {
		panic("platform: input " + t.String() + " is not a struct")
	}
	p := &inputPlan{typ: t}
	var loose []string // body fields outside a Body field
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			idx := append(append([]int(nil), index...), i)
			in, name := paramTag(f)
			switch {
			case in != "":
				p.params = append(p.params, planParam(t, f, idx, in, name))
			case f.Type == peerType:
				p.peers = append(p.peers, idx)
			case f.Type == targetType:
				p.targets = append(p.targets, idx)
			case isBodyField(f):
				if p.body != nil {
					panic("platform: input " + p.typ.String() + " has two Body fields")
				}
				p.body = planBody(f.Type, idx)
			case f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "":
				walk(f.Type, idx)
			case f.IsExported() && f.Tag.Get("json") != "-":
				loose = append(loose, f.Name)
			}
		}
	}
	walk(t, nil)
	switch {
	case len(loose) > 0 && (len(p.params) > 0 || p.body != nil || len(p.peers) > 0 || len(p.targets) > 0):
		panic("platform: input " + t.String() + " mixes parameters with body fields (" + strings.Join(loose, ", ") +
			"); put the body in a field named Body")
	case len(loose) > 0:
		p.body = planBody(t, nil)
	}
	p.validate = p.body == nil || p.body.index != nil
	p.validate = p.validate && reflect.PointerTo(t).Implements(validatorType)
	p.validateParams = reflect.PointerTo(t).Implements(paramsValidatorType)
	return p
}

// isBodyField: f is the Body of an input or output wrapper (a field named
// Body without a json tag: a resource's own "body" member has one).
func isBodyField(f reflect.StructField) bool {
	_, tagged := f.Tag.Lookup("json")
	return f.Name == "Body" && !tagged
}

func paramTag(f reflect.StructField) (in, name string) {
	for _, in := range []string{"path", "query", "header", "cookie"} {
		if v, ok := f.Tag.Lookup(in); ok {
			if v == "" {
				panic("platform: field " + f.Name + ": empty " + in + " tag")
			}
			return in, v
		}
	}
	return "", ""
}

func planParam(owner reflect.Type, f reflect.StructField, idx []int, in, name string) paramField {
	where := owner.String() + "." + f.Name
	pf := paramField{index: idx, typ: f.Type}
	if pf.typ.Kind() == reflect.Pointer {
		pf.ptr, pf.typ = true, pf.typ.Elem()
	}
	p := Param{Name: name, In: in, Description: f.Tag.Get("doc"), Required: in == "path" || f.Tag.Get("required") == "true",
		Default: f.Tag.Get("default"), Format: f.Tag.Get("format"), Pattern: f.Tag.Get("pattern")}
	pf.text = reflect.PointerTo(pf.typ).Implements(textUnmarshaler)
	if pf.typ == timeType && p.Format == "" {
		p.Format = "date-time"
	}
	switch k := pf.typ.Kind(); {
	case pf.text, k == reflect.String:
		p.Type = "string"
	case k == reflect.Bool:
		p.Type = "boolean"
	case k >= reflect.Int && k <= reflect.Uint64: // the signed kinds, then the unsigned
		p.Type = "integer"
	case k == reflect.Float32 || k == reflect.Float64:
		p.Type = "number"
	default:
		panic("platform: parameter " + where + " has type " + f.Type.String() + ", which a parameter cannot hold")
	}
	if e := f.Tag.Get("enum"); e != "" {
		p.Enum = strings.Split(e, ",")
	}
	p.MinLength, p.MaxLength = tagInt(f, "minLength"), tagInt(f, "maxLength")
	p.Range = tagRange(f, p.Type == "integer" && pf.typ.Kind() >= reflect.Uint && pf.typ.Kind() <= reflect.Uint64)
	if p.Range != nil && p.Type != "integer" && p.Type != "number" {
		panic("platform: parameter " + where + " has bounds but is not numeric")
	}
	if p.Pattern != "" {
		if _, err := regexp.Compile(p.Pattern); err != nil {
			panic("platform: parameter " + where + ": pattern: " + err.Error())
		}
	}
	if p.Default != "" {
		if _, err := parseParam(p, p.Default); err != nil {
			panic("platform: parameter " + where + ": default: " + err.Error())
		}
	}
	pf.p = p
	return pf
}

// tagInt reads a non-negative integer tag (0 when absent).
func tagInt(f reflect.StructField, name string) int {
	v := f.Tag.Get(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		panic("platform: field " + f.Name + ": " + name + " must be a non-negative integer, got " + v)
	}
	return n
}

// tagRange reads minimum, maximum, exclusiveMinimum and exclusiveMaximum;
// unsigned says the value cannot be negative anyway.
func tagRange(f reflect.StructField, unsigned bool) *Range {
	num := func(name string) (float64, bool) {
		v, ok := f.Tag.Lookup(name)
		if !ok {
			return 0, false
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			panic("platform: field " + f.Name + ": " + name + " must be a number, got " + v)
		}
		return x, true
	}
	r := Range{Min: math.Inf(-1), Max: math.Inf(1)}
	set := false
	if x, ok := num("minimum"); ok {
		r.Min, set = x, true
	}
	if x, ok := num("exclusiveMinimum"); ok {
		r.Min, r.ExclusiveMin, set = x, true, true
	}
	if x, ok := num("maximum"); ok {
		r.Max, set = x, true
	}
	if x, ok := num("exclusiveMaximum"); ok {
		r.Max, r.ExclusiveMax, set = x, true, true
	}
	if !set {
		if unsigned {
			return &Range{Min: 0, Max: math.Inf(1)}
		}
		return nil
	}
	if unsigned && r.Min < 0 {
		r.Min, r.ExclusiveMin = 0, false
	}
	return &r
}

func planBody(t reflect.Type, idx []int) *bodyPlan {
	b := &bodyPlan{index: idx, typ: t}
	if t == bytesType {
		b.raw = true
		return b
	}
	if t == readerType {
		if idx == nil {
			panic("platform: an io.Reader input must be a field named Body")
		}
		b.stream = true
		return b
	}
	b.check = compileChecks(t, map[reflect.Type]bool{})
	b.validate = reflect.PointerTo(t).Implements(validatorType)
	return b
}

// bind fills dst (a pointer to the plan's type) from the request; wild
// is the route's trailing {name...} parameter, if any.
func (p *inputPlan) bind(c fiber.Ctx, dst any, wild string) error {
	var v reflect.Value // only when a field is set by index
	if len(p.params) > 0 || len(p.peers) > 0 || len(p.targets) > 0 || (p.body != nil && p.body.index != nil) {
		v = reflect.ValueOf(dst).Elem()
	}
	for i := range p.params {
		if err := p.params[i].bind(c, v, wild); err != nil {
			return err
		}
	}
	for _, idx := range p.targets {
		tg := Target{Method: strings.Clone(c.Method()), Host: string(c.Request().Host()), Scheme: strings.Clone(c.Scheme())}
		v.FieldByIndex(idx).Set(reflect.ValueOf(tg))
	}
	for _, idx := range p.peers {
		peer := Peer{RemoteIP: c.RequestCtx().RemoteIP(), LocalIP: c.RequestCtx().LocalIP()}
		v.FieldByIndex(idx).Set(reflect.ValueOf(peer))
	}
	if p.validateParams {
		if err := dst.(ParamsValidator).ValidateParams(); err != nil {
			return err
		}
	}
	if b := p.body; b != nil {
		target := dst
		if b.index != nil {
			target = v.FieldByIndex(b.index).Addr().Interface()
		}
		if b.stream {
			*(target.(*io.Reader)) = streamedBody(c)
		} else if err := b.decode(c.Body(), target); err != nil {
			return err
		}
	}
	if p.validate {
		return dst.(Validator).Validate()
	}
	return nil
}

// bodyReader is the request body as a stream: a host with
// StreamRequestBody streams bodies past its buffer, and buffered ones are
// read from memory (valid until the handler returns).
func bodyReader(c fiber.Ctx) io.Reader {
	if r := c.Request().BodyStream(); r != nil {
		return r
	}
	return bytes.NewReader(c.Body())
}

// trackedBody is an io.Reader Body that knows whether it was read to its
// end, so a failed method's connection is closed only when some of the
// body is left (it would be taken for the next request).
type trackedBody struct {
	r   io.Reader
	eof bool
}

type trackedBodyKey struct{}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// streamedBody is an io.Reader Body: http.NoBody for a request without
// one (most WebDAV requests, every GET), else the body tracked.
func streamedBody(c fiber.Ctx) io.Reader {
	if !hasBody(c) {
		return http.NoBody
	}
	tb := &trackedBody{r: bodyReader(c)}
	c.RequestCtx().SetUserValue(trackedBodyKey{}, tb)
	return tb
}

// bodyLeft reports whether the request's body may be partly unread: an
// io.Reader Body not read to its end, of a request that declared one.
func bodyLeft(c fiber.Ctx) bool {
	if !hasBody(c) {
		return false
	}
	tb, _ := c.RequestCtx().UserValue(trackedBodyKey{}).(*trackedBody)
	return tb == nil || !tb.eof
}

// hasBody reports whether the request carries a body: one the host
// streams, or bytes it buffered.
func hasBody(c fiber.Ctx) bool {
	return c.Request().BodyStream() != nil || len(c.Request().Body()) > 0
}

// AbandonBody closes the connection after the answer to a request whose
// body may be left unread, which would otherwise be taken for the next
// request. It reads a little of what is left first (as net/http does), so
// a client still sending sees the answer rather than a reset.
func AbandonBody(c fiber.Ctx) {
	if r := c.Request().BodyStream(); r != nil {
		_, _ = io.CopyN(io.Discard, r, 8<<20)
	}
	c.RequestCtx().SetConnectionClose()
}

// decode reads body into dst (a pointer to the body's type) and checks it.
func (b *bodyPlan) decode(body []byte, dst any) error {
	if b.raw {
		*(dst.(*[]byte)) = append([]byte{}, body...) // the request's buffer is reused
		return nil
	}
	if err := decodeStrict(body, dst); err != nil {
		return err
	}
	if b.validate {
		if err := dst.(Validator).Validate(); err != nil {
			return err
		}
	}
	if b.check != nil {
		return b.check(reflect.ValueOf(dst).Elem(), "")
	}
	return nil
}

func (f *paramField) bind(c fiber.Ctx, v reflect.Value, wild string) error {
	var raw string // copied: Fiber's and fasthttp's buffers are reused
	given, rest := false, false
	switch f.p.In {
	case "path":
		name := f.p.Name
		if name == wild {
			name, rest = "*", true // the rest of the path, empty for the prefix itself
		}
		raw = strings.Clone(c.Params(name))
		given = true
	case "header":
		if h := c.Get(f.p.Name); h != "" {
			raw, given = strings.Clone(h), true
		}
	case "cookie":
		// Twice is ambiguous (one may be planted from another port of
		// the host), as a query parameter given twice is.
		v, n := SoleCookie(c, f.p.Name)
		if n > 1 {
			return queryErr(f.p, "must be given at most once")
		}
		if v != "" {
			raw, given = v, true
		}
	default:
		n := 0
		for k, v := range c.RequestCtx().QueryArgs().All() {
			if string(k) != f.p.Name {
				continue
			}
			if n++; n > 1 {
				return queryErr(f.p, "must be given at most once")
			}
			raw, given = string(v), true
		}
	}
	return f.apply(v, raw, given, rest)
}

// apply stores the parameter's value (paramValue) into its field of v.
func (f *paramField) apply(v reflect.Value, raw string, given, rest bool) error {
	parsed, ok, err := paramValue(f.p, raw, given, rest)
	if !ok {
		return err
	}
	fv := v.FieldByIndex(f.index)
	if f.ptr {
		fv.Set(reflect.New(f.typ))
		fv = fv.Elem()
	}
	return f.set(fv, parsed)
}

// set stores a value parseParam answered into fv (of the field's type).
func (f *paramField) set(fv reflect.Value, parsed any) error {
	if f.text {
		s, _ := parsed.(string)
		if err := fv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			if pe, ok := err.(*fault.Error); ok {
				return pe
			}
			if f.p.Format == "date-time" {
				return queryErr(f.p, "must be an RFC 3339 time (2026-01-02T15:04:05Z), got "+strconv.Quote(s))
			}
			return queryErr(f.p, "is not valid, got "+strconv.Quote(s)) // the type's own words may not be for clients
		}
		return nil
	}
	switch x := parsed.(type) {
	case string:
		fv.SetString(x)
	case bool:
		fv.SetBool(x)
	case float64:
		fv.SetFloat(x)
	case int64:
		if fv.Kind() >= reflect.Uint && fv.Kind() <= reflect.Uint64 {
			if x < 0 || fv.OverflowUint(uint64(x)) {
				return queryErr(f.p, "must be an integer from 0 to "+strconv.FormatUint(math.MaxUint64>>(64-fv.Type().Bits()), 10))
			}
			fv.SetUint(uint64(x))
			return nil
		}
		if fv.OverflowInt(x) {
			bits := fv.Type().Bits()
			return queryErr(f.p, "must be an integer from "+strconv.FormatInt(-1<<(bits-1), 10)+" to "+strconv.FormatInt(1<<(bits-1)-1, 10))
		}
		fv.SetInt(x)
	}
	return nil
}

// checker checks the rules tags put on a body's fields; path is where v
// sits in the body ("" at its root).
type checker func(v reflect.Value, path string) error

// compileChecks builds the checker of t's tag rules, nil when t has none.
func compileChecks(t reflect.Type, seen map[reflect.Type]bool) checker {
	switch t.Kind() {
	case reflect.Pointer:
		inner := compileChecks(t.Elem(), seen)
		if inner == nil {
			return nil
		}
		return func(v reflect.Value, path string) error {
			if v.IsNil() {
				return nil
			}
			return inner(v.Elem(), path)
		}
	case reflect.Slice, reflect.Array:
		inner := compileChecks(t.Elem(), seen)
		if inner == nil {
			return nil
		}
		return func(v reflect.Value, path string) error {
			for i := 0; i < v.Len(); i++ {
				if err := inner(v.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
			return nil
		}
	case reflect.Map:
		inner := compileChecks(t.Elem(), seen)
		if inner == nil || t.Key().Kind() != reflect.String {
			return nil
		}
		return func(v reflect.Value, path string) error {
			it := v.MapRange()
			for it.Next() {
				if err := inner(it.Value(), join(path, it.Key().String())); err != nil {
					return err
				}
			}
			return nil
		}
	case reflect.Struct:
		if seen[t] || t == timeType {
			return nil // a recursive type's rules are checked at its first level
		}
		seen[t] = true
		defer delete(seen, t)
		type fieldCheck struct {
			index []int
			name  string
			check checker
		}
		var checks []fieldCheck
		var walk func(t reflect.Type, index []int)
		walk = func(t reflect.Type, index []int) {
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				name, embedded := openapi.JSONName(f)
				if name == "" && !embedded {
					continue
				}
				idx := append(append([]int(nil), index...), i)
				if embedded {
					walk(f.Type, idx)
					continue
				}
				if c := fieldChecks(f, name, seen); c != nil {
					checks = append(checks, fieldCheck{idx, name, c})
				}
			}
		}
		walk(t, nil)
		if len(checks) == 0 {
			return nil
		}
		return func(v reflect.Value, path string) error {
			for _, fc := range checks {
				if err := fc.check(v.FieldByIndex(fc.index), join(path, fc.name)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// fieldChecks is the checker of one body field's tags and of the rules
// inside its value.
func fieldChecks(f reflect.StructField, name string, seen map[reflect.Type]bool) checker {
	t := f.Type
	ptr := t.Kind() == reflect.Pointer
	if ptr {
		t = t.Elem()
	}
	required := f.Tag.Get("required") == "true"
	var rules []func(v reflect.Value, path string) error
	if e := f.Tag.Get("enum"); e != "" && t.Kind() == reflect.String {
		allowed := strings.Split(e, ",")
		rules = append(rules, func(v reflect.Value, path string) error {
			s := v.String()
			if slices.Contains(allowed, s) {
				return nil
			}
			return fault.Invalid(path, "must be one of %s, got %q", strings.Join(allowed, ", "), s)
		})
	}
	if isNumber(t.Kind()) {
		if r := tagRange(f, false); r != nil {
			rules = append(rules, func(v reflect.Value, path string) error {
				var x float64
				switch k := v.Kind(); {
				case k >= reflect.Int && k <= reflect.Int64:
					x = float64(v.Int())
				case k >= reflect.Uint && k <= reflect.Uint64:
					x = float64(v.Uint())
				default:
					x = v.Float()
				}
				if !r.holds(x) {
					return fault.Invalid(path, "must be"+r.describe()+", got %s", fmtNum(x))
				}
				return nil
			})
		}
	}
	if t.Kind() == reflect.String {
		minLen, maxLen, pattern := tagInt(f, "minLength"), tagInt(f, "maxLength"), f.Tag.Get("pattern")
		if pattern != "" {
			compiled(pattern) // panics now on a bad pattern, not on a request
		}
		if minLen > 0 || maxLen > 0 || pattern != "" {
			rules = append(rules, func(v reflect.Value, path string) error {
				if rule := stringRule(v.String(), minLen, maxLen, pattern); rule != "" {
					return fault.Invalid(path, "%s", rule)
				}
				return nil
			})
		}
	}
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		minItems, maxItems := tagInt(f, "minItems"), tagInt(f, "maxItems")
		if minItems > 0 || maxItems > 0 {
			rules = append(rules, func(v reflect.Value, path string) error {
				n := v.Len()
				if minItems > 0 && n < minItems {
					return fault.Invalid(path, "must have at least %d items, got %d", minItems, n)
				}
				if maxItems > 0 && n > maxItems {
					return fault.Invalid(path, "must have at most %d items, got %d", maxItems, n)
				}
				return nil
			})
		}
	}
	inner := compileChecks(t, seen)
	if !required && len(rules) == 0 && inner == nil {
		return nil
	}
	return func(v reflect.Value, path string) error {
		if ptr {
			if v.IsNil() {
				if required {
					return fault.Invalid(path, "is required")
				}
				return nil
			}
			v = v.Elem()
		} else if v.IsZero() {
			if required && canBeEmpty(v.Kind()) {
				return fault.Invalid(path, "is required")
			}
			return nil // not given
		}
		for _, r := range rules {
			if err := r(v, path); err != nil {
				return err
			}
		}
		if inner != nil {
			return inner(v, path)
		}
		return nil
	}
}

// canBeEmpty: a required field of this kind is missing when it is zero:
// JSON leaves an array, an object or any value nil only when it was absent
// or null. A string's, number's or boolean's zero may be a value someone
// sent ("" is a valid title), so the domain's Validate judges those.
func canBeEmpty(k reflect.Kind) bool {
	switch k {
	case reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

func isNumber(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Uint64) || k == reflect.Float32 || k == reflect.Float64
}
