package proxyperm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Programs are the program names a permission rule may name: the spec's,
// and desktop (an extension: driving the display, which a services grant
// never does).
var Programs = []string{"http", "terminal", "ssh", "files", "exec", "services", "notifications", "desktop"}

// IsProgram reports whether name is one of Programs.
func IsProgram(name string) bool { return slices.Contains(Programs, name) }

// AccessKind is the form an access value was written in.
type AccessKind uint8

// The access forms of docs/spec/interface.md.
const (
	AccessInvalid AccessKind = iota
	AccessAll                // true
	AccessNone               // false
	AccessStar               // "*"
	AccessPort               // 8080
	AccessPorts              // [80, 443]
	AccessRange              // "8000-8100"
)

// Access is one program access rule value. The zero value is invalid;
// ParseAccess (or JSON decoding) makes one.
type Access struct {
	Kind     AccessKind
	Ports    []int // AccessPort (one) and AccessPorts
	From, To int   // AccessRange
}

// AccessError is why a raw access value was refused; Rule is the client
// message without the field name.
type AccessError struct{ Rule string }

func (e *AccessError) Error() string { return e.Rule }

func accessErr(format string, args ...any) error {
	return &AccessError{Rule: fmt.Sprintf(format, args...)}
}

const accessForms = "must be true, false, a port 1-65535, an array of ports, a \"<from>-<to>\" range or \"*\""

// ParseAccess reads one access value in any of its JSON forms.
func ParseAccess(raw []byte) (Access, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Access{}, accessErr("is required")
	}
	switch raw[0] {
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return Access{}, accessErr(accessForms)
		}
		if b {
			return Access{Kind: AccessAll}, nil
		}
		return Access{Kind: AccessNone}, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Access{}, accessErr(accessForms)
		}
		return parseAccessString(s)
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return Access{}, accessErr(accessForms)
		}
		if len(items) == 0 {
			return Access{}, accessErr("must list at least one port (use false to deny all)")
		}
		if len(items) > 65535 {
			return Access{}, accessErr("lists too many ports")
		}
		a := Access{Kind: AccessPorts, Ports: make([]int, 0, len(items))}
		for i, it := range items {
			p, err := parsePort(it)
			if err != nil {
				return Access{}, accessErr("[%d] %s", i, err.Error())
			}
			a.Ports = append(a.Ports, p)
		}
		return a, nil
	case 'n':
		return Access{}, accessErr("is required (null is not an access value)")
	default:
		p, err := parsePort(raw)
		if err != nil {
			return Access{}, err
		}
		return Access{Kind: AccessPort, Ports: []int{p}}, nil
	}
}

func parsePort(raw json.RawMessage) (int, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, accessErr("a port must be an integer 1-65535, got %s", clip(s))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f == float64(int64(f)) && !strings.ContainsAny(s, ".eE") {
			n = int64(f)
		} else {
			return 0, accessErr("a port must be an integer 1-65535, got %s", clip(s))
		}
	}
	if n < 1 || n > 65535 {
		return 0, accessErr("port %d is out of range 1-65535", n)
	}
	return int(n), nil
}

func parseAccessString(s string) (Access, error) {
	if s == "*" {
		return Access{Kind: AccessStar}, nil
	}
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return Access{}, accessErr(accessForms+", got %q", clip(s))
	}
	f, err1 := rangeEnd(from)
	t, err2 := rangeEnd(to)
	if err1 != nil || err2 != nil {
		return Access{}, accessErr("range %q: both ends must be ports 1-65535", clip(s))
	}
	if f > t {
		return Access{}, accessErr("range %q: from must not exceed to", clip(s))
	}
	return Access{Kind: AccessRange, From: f, To: t}, nil
}

func rangeEnd(s string) (int, error) {
	if s == "" || len(s) > 5 {
		return 0, accessErr("bad")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, accessErr("bad")
		}
	}
	n, _ := strconv.Atoi(s)
	if n < 1 || n > 65535 {
		return 0, accessErr("bad")
	}
	return n, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// UnmarshalJSON accepts every access form.
func (a *Access) UnmarshalJSON(raw []byte) error {
	v, err := ParseAccess(raw)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// MarshalJSON writes the access in the form it was given.
func (a Access) MarshalJSON() ([]byte, error) {
	switch a.Kind {
	case AccessAll:
		return []byte("true"), nil
	case AccessNone:
		return []byte("false"), nil
	case AccessStar:
		return []byte(`"*"`), nil
	case AccessPort:
		return []byte(strconv.Itoa(a.Ports[0])), nil
	case AccessPorts:
		return json.Marshal(a.Ports)
	case AccessRange:
		return json.Marshal(fmt.Sprintf("%d-%d", a.From, a.To))
	}
	return nil, fmt.Errorf("proxyperm: invalid access value")
}

// JSONSchema is the access value's schema in the OpenAPI documents.
func (*Access) JSONSchema() map[string]any {
	return map[string]any{
		"description": "true (allow all), false (deny all), a port 1-65535, an array of ports, a \"<from>-<to>\" range or \"*\"",
		"oneOf": []any{
			map[string]any{"type": "boolean"},
			map[string]any{"type": "integer", "minimum": 1, "maximum": 65535},
			map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "integer", "minimum": 1, "maximum": 65535}},
			map[string]any{"type": "string", "pattern": `^(\*|[0-9]{1,5}-[0-9]{1,5})$`},
		},
	}
}

// Allows reports whether the rule admits port. Port 0 stands for "no
// port" (a program reached without one): only the allow-all forms admit it.
func (a Access) Allows(port int) bool {
	switch a.Kind {
	case AccessAll, AccessStar:
		return true
	case AccessPort, AccessPorts:
		for _, p := range a.Ports {
			if p == port {
				return true
			}
		}
	case AccessRange:
		return port >= a.From && port <= a.To
	}
	return false
}
