package platform

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"deckhand/platform/fault"
	"deckhand/platform/openapi"
)

// checkTool panics on a route that cannot be the tool it says it is.
func (h *Host) checkTool(r Route) {
	where := "platform: route " + r.Method + " " + r.Path + " as tool " + r.Tool.Name + ": "
	if r.Tool.Name == "" || r.Tool.Description == "" {
		panic(where + "a tool needs a name and a description")
	}
	for field, src := range map[string]string{"Text": r.Tool.Text, "Failed": r.Tool.Failed} {
		if _, err := ParseToolText(r.Tool.Name, src); err != nil {
			panic(where + "its " + field + ": " + err.Error())
		}
	}
	if r.Op == nil || r.Op.operation().call == nil {
		panic(where + "only an Op, ReadOp or CommandOp route can be a tool")
	}
	o := r.Op.operation()
	if o.in.binary() {
		panic(where + "its body is bytes, not a JSON object")
	}
	if o.in != nil && o.in.body != nil && derefKind(o.in.body.typ) != reflect.Struct {
		panic(where + "its body is not a JSON object")
	}
	args, twice := r.Tool.operationArgs(o.in)
	if twice != "" {
		panic(where + "parameter " + twice + " is also a member of its body")
	}
	if o.out != nil && (o.out.binary() || (o.out.bodyTyp != nil && derefKind(o.out.bodyTyp) != reflect.Struct)) {
		panic(where + "its answer is not a JSON object")
	}
	if r.Tool.Pages != "" && (args["max_chars"] || args["offset"]) {
		panic(where + "a paged tool's max_chars and offset are the MCP service's, not its operation's")
	}
	for _, member := range []string{r.Tool.Pages, r.Tool.Image} {
		if member == "" {
			continue
		}
		var props map[string]any
		if o.out != nil && o.out.bodyTyp != nil {
			props, _ = (*openapi.Builder)(nil).SchemaOf(o.out.bodyTyp)["properties"].(map[string]any)
		}
		if m, _ := props[member].(map[string]any); m == nil || m["type"] != "string" {
			panic(where + "its answer has no string member " + member)
		}
	}
	pol := r.Policy
	if h.cfg.Auth != nil || pol.Check != nil || (pol.Access != AccessDefault && pol.Access != AccessPublic) || len(r.Limits) > 0 {
		panic(where + "a tool's caller is judged by the MCP service, not per request: the host must have nothing to enforce")
	}
	if _, twice := h.tools[r.Tool.Name]; twice {
		panic(where + "two routes are this tool")
	}
	h.tools[r.Tool.Name] = r
}

func derefKind(t reflect.Type) reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

// CallTool runs the operation of the route that is tool name with args
// (a JSON object, as tools/call carries them), in memory: the arguments
// are bound and checked by the binder's rules (a parameter's grammar and
// bounds, the body's strict decoding, tags and Validate), the domain
// method runs with ctx, and its answer is returned as the method gave it
// (a wrapper's Body; nil for a CommandOp). A broken rule is the same
// *fault.Error an HTTP request gets; an unknown tool is NOT_FOUND.
func (h *Host) CallTool(ctx context.Context, name string, args json.RawMessage) (out any, err error) {
	defer func() {
		// As the host's kernel does for a request: a panic in the method
		// is an internal error, logged, not the caller's crash.
		if p := recover(); p != nil {
			h.log.Error("panic in tool", "tool", name, "panic", p)
			out, err = nil, fault.Internal("run the tool", errors.New("panic"))
		}
	}()
	r, ok := h.tools[name]
	if !ok {
		return nil, &fault.Error{Code: fault.CodeNotFound, Details: "tool", Message: "no tool " + strconv.Quote(name) + " on this service"}
	}
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) > 0 && !bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, fault.Invalid("arguments", "must be a JSON object")
		}
	}
	return r.Op.operation().call(ctx, r, m)
}

// Tools are the names of the host's tools.
func (h *Host) Tools() []string {
	return slices.Sorted(maps.Keys(h.tools))
}

// bindArgs fills dst (a pointer to the plan's type) from a tool's
// arguments: each parameter from the member of its name (a string, or a
// number or boolean for one of those types), the body from the members
// left. It takes the members it uses out of args.
func (p *inputPlan) bindArgs(r Route, args map[string]json.RawMessage, dst any) error {
	var v reflect.Value
	if len(p.params) > 0 || len(p.targets) > 0 || (p.body != nil && p.body.index != nil) {
		v = reflect.ValueOf(dst).Elem()
	}
	for i := range p.params {
		f := &p.params[i]
		raw, given := "", false
		name := r.Tool.arg(f.p.Name)
		if a, ok := args[name]; ok && name != "-" {
			delete(args, name)
			s, err := argText(a)
			if err != nil {
				return fault.Invalid(name, "must be a %s", cmp.Or(f.p.Type, "string"))
			}
			raw, given = s, a != nil && !bytes.Equal(a, []byte("null"))
		}
		// The binder's errors name the argument as the caller sent it.
		g := *f
		g.p.Name, g.p.In = name, "argument"
		if err := g.apply(v, raw, given, false); err != nil {
			return err
		}
	}
	for _, idx := range p.targets {
		v.FieldByIndex(idx).Set(reflect.ValueOf(Target{Method: r.Method, Scheme: "http"}))
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
		raw, err := json.Marshal(args)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			raw = []byte("{}")
		}
		if err := b.decode(raw, target); err != nil {
			return err
		}
	} else {
		for name := range args {
			return fault.Invalid(name, "is not an argument of this tool")
		}
	}
	if p.validate {
		return dst.(Validator).Validate()
	}
	return nil
}

// argText is a JSON scalar as a parameter's text: a string's value, a
// number's or a boolean's literal.
func argText(a json.RawMessage) (string, error) {
	a = bytes.TrimSpace(a)
	if len(a) == 0 || bytes.Equal(a, []byte("null")) {
		return "", nil
	}
	switch a[0] {
	case '"':
		var s string
		err := json.Unmarshal(a, &s)
		return s, err
	case '{', '[':
		return "", fault.Invalid("arguments", "not a scalar")
	}
	return string(a), nil
}

// toolAnswer is what a tool answers of an operation's output: a
// wrapper's Body, else the output itself.
func (p *outputPlan) toolAnswer(out any) any {
	if p == nil || !p.wrapper {
		return out
	}
	v := reflect.ValueOf(out)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if p.body == nil {
		return nil
	}
	return v.FieldByIndex(p.body).Interface()
}
