package proxyperm

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/secrets"
)

// Group types.
const (
	TypeJWT             = "jwt"
	TypePassword        = "password"
	TypeIP              = "ip"
	TypeToken           = "token"
	TypeServiceIdentity = "service-identity"
)

// Types lists the group types.
var Types = []string{TypeJWT, TypePassword, TypeIP, TypeToken, TypeServiceIdentity}

// Limits of a document.
const (
	MaxGroups   = 500
	MaxSources  = 16
	MaxClaims   = 32
	MaxIdents   = 256
	MaxTools    = 256
	maxValueLen = 8192
)

// Default policies.
const (
	Allow = "allow"
	Deny  = "deny"
)

// Group is one authentication group. Type says which fields apply; the
// others must be empty.
//
// The secrets (a jwt HS256 secret, a password's hash and salt, a token's
// value) travel in clear only to the container's agent. A document shown
// to people is Masked: each secret is absent and its <field>_configured is
// true. A write carrying <field>_configured instead of the secret keeps
// the stored one (Unmask).
type Group struct {
	Type string `json:"type"`
	// jwt
	Secret           string         `json:"secret,omitempty"`
	SecretConfigured bool           `json:"secret_configured,omitempty"`
	Algorithm        string         `json:"algorithm,omitempty"` // jwt: HS256/RS256/ES256; password: argon2id or sha256
	Sources          []string       `json:"sources,omitempty"`
	Claims           map[string]any `json:"claims,omitempty"`
	// password
	Username           string `json:"username,omitempty"`
	Password           string `json:"password,omitempty"`
	PasswordConfigured bool   `json:"password_configured,omitempty"`
	Salt               string `json:"salt,omitempty"`
	// ip
	Range string `json:"range,omitempty"`
	// token
	Header          string `json:"header,omitempty"`
	Cookie          string `json:"cookie,omitempty"`
	Param           string `json:"param,omitempty"`
	Value           string `json:"value,omitempty"`
	ValueConfigured bool   `json:"value_configured,omitempty"`
	// service-identity
	Containers []string `json:"containers,omitempty"`
	Projects   []string `json:"projects,omitempty"`
	// Every type: the tools of the mcp service this group's callers may
	// use (nil: every tool their program reach allows). An extension of
	// the spec's document; see ToolList.
	MCPTools []string `json:"mcp_tools,omitempty" doc:"Extension (any group type): the tool allow-list of the agent's mcp service. Tool names or prefixes ending in one '*' (files_*), 1 to 256 entries; '*' alone allows every tool. A caller admitted to the mcp service by groups carrying a list may use only the union of their lists (still only tools of services its program reach allows); a caller admitted by groups without one keeps every tool. A group carrying a list admits its holder to the mcp service only: its other programs act through the tools, never on a request sent straight to another service. Absent means no list; an empty array is refused."`
}

// Rules maps a program name to its access.
type Rules map[string]Access

// Document is the proxy permissions document.
type Document struct {
	Project     string                       `json:"project"`
	Container   string                       `json:"container"`
	Groups      map[string]Group             `json:"groups"`
	Permissions map[string]Rules             `json:"permissions"`
	Default     string                       `json:"default"`
	EnableProxy *bool                        `json:"enable_proxy"`
	Hooks       map[string][]json.RawMessage `json:"hooks,omitempty"`
	FileVersion int64                        `json:"file_version"`
	ETag        string                       `json:"etag"`
}

// ETag is the entity tag of a version: file:v<n>.
func ETag(version int64) string { return "file:v" + strconv.FormatInt(version, 10) }

// ParseETag reads "file:v<n>" (optionally in double quotes, as HTTP
// entity tags travel); ok is false for anything else.
func ParseETag(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	rest, ok := strings.CutPrefix(s, "file:v")
	if !ok || rest == "" || len(rest) > 18 {
		return 0, false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
}

// Proxy reports whether the proxy is enabled (absent means true).
func (d *Document) Proxy() bool { return d.EnableProxy == nil || *d.EnableProxy }

// wireDocument is Document with access values still raw, so a bad one is
// refused naming its place (permissions.<group>.<program>).
// (Not embedding Document: its Validate would run before the access
// values are read.)
type wireDocument struct {
	Project     string                                `json:"project"`
	Container   string                                `json:"container"`
	Groups      map[string]json.RawMessage            `json:"groups"`
	Permissions map[string]map[string]json.RawMessage `json:"permissions"`
	Default     string                                `json:"default"`
	EnableProxy *bool                                 `json:"enable_proxy"`
	Hooks       map[string][]json.RawMessage          `json:"hooks,omitempty"`
	FileVersion int64                                 `json:"file_version"`
	ETag        string                                `json:"etag"`
}

// Decode reads a document strictly: unknown fields are refused, and
// Validate runs. file_version and etag, when present, are ignored (the
// store assigns them).
func Decode(raw []byte) (*Document, error) {
	var w wireDocument
	if err := platform.DecodeBytes(raw, &w); err != nil {
		return nil, err
	}
	d := Document{Project: w.Project, Container: w.Container, Default: w.Default,
		EnableProxy: w.EnableProxy, Hooks: w.Hooks}
	if w.Groups != nil {
		d.Groups = make(map[string]Group, len(w.Groups))
		for _, name := range slices.Sorted(maps.Keys(w.Groups)) {
			g, err := decodeGroup(name, w.Groups[name])
			if err != nil {
				return nil, err
			}
			d.Groups[name] = g
		}
	}
	if w.Permissions != nil {
		d.Permissions = make(map[string]Rules, len(w.Permissions))
		for _, g := range slices.Sorted(maps.Keys(w.Permissions)) {
			rules := Rules{}
			for _, prog := range slices.Sorted(maps.Keys(w.Permissions[g])) {
				a, err := DecodeAccess("permissions."+g+"."+prog, w.Permissions[g][prog])
				if err != nil {
					return nil, err
				}
				rules[prog] = a
			}
			d.Permissions[g] = rules
		}
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// decodeGroup reads one group strictly; a refusal names the field under
// the group (groups.<name>.mcp_tools), which a decode of the whole
// document cannot: encoding/json leaves map keys out of its paths.
func decodeGroup(name string, raw json.RawMessage) (Group, error) {
	var g Group
	err := platform.DecodeBytes(raw, &g)
	var pe *fault.Error
	if err == nil || !errors.As(err, &pe) || pe.Code != fault.CodeInvalid {
		return g, err
	}
	sub := pe.Details
	rule := strings.TrimPrefix(pe.Message, sub+": ")
	field := "groups." + name
	if sub != "" && sub != "body" {
		field += "." + sub
	}
	return g, fault.Invalid(field, "%s", rule)
}

// DecodeAccess is ParseAccess with a refusal as a 400 naming field.
func DecodeAccess(field string, raw []byte) (Access, error) {
	a, err := ParseAccess(raw)
	if err != nil {
		var ae *AccessError
		if errors.As(err, &ae) {
			return Access{}, fault.Invalid(field, "access %s", ae.Rule)
		}
		return Access{}, fault.Invalid(field, "access %s", accessForms)
	}
	return a, nil
}

var (
	nameRe  = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	tokenRe = lazyre.New(`^[!#$%&'*+.^_` + "`" + `|~0-9A-Za-z-]{1,128}$`) // RFC 9110 token: header, cookie and param names
	hexSHA  = lazyre.New(`^[0-9a-f]{64}$`)
	identRe = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.*-]{0,127}$`)
	toolRe  = lazyre.New(`^[A-Za-z0-9_.-]{0,128}$`)
)

// ValidGroupName checks a group name (path segment or map key).
func ValidGroupName(field, name string) error {
	if !nameRe.MatchString(name) {
		return fault.Invalid(field, "must be 1-64 characters of letters, digits, '_', '.', '-', starting with a letter or digit")
	}
	return nil
}

// Validate checks the whole document and fills defaults (default "deny",
// enable_proxy true). It does not hash passwords: Normalize does.
func (d *Document) Validate() error {
	if d.Project == "" {
		return fault.Invalid("project", errEmpty)
	}
	if d.Container == "" {
		return fault.Invalid("container", errEmpty)
	}
	if d.Groups == nil {
		return fault.Invalid("groups", "is required (an object; {} for none)")
	}
	if d.Permissions == nil {
		return fault.Invalid("permissions", "is required (an object; {} for none)")
	}
	if len(d.Groups) > MaxGroups {
		return fault.Invalid("groups", "at most %d groups", MaxGroups)
	}
	switch d.Default {
	case "":
		d.Default = Deny
	case Allow, Deny:
	default:
		return fault.Invalid("default", "must be allow or deny")
	}
	if d.EnableProxy == nil {
		d.EnableProxy = new(true)
	}
	for _, name := range slices.Sorted(maps.Keys(d.Groups)) {
		if err := ValidGroupName("groups."+name, name); err != nil {
			return err
		}
		g := d.Groups[name]
		if err := g.Validate("groups." + name); err != nil {
			return err
		}
		d.Groups[name] = g
	}
	if len(d.Permissions) > MaxGroups {
		return fault.Invalid("permissions", "at most %d groups", MaxGroups)
	}
	for _, name := range slices.Sorted(maps.Keys(d.Permissions)) {
		if err := ValidGroupName("permissions."+name, name); err != nil {
			return err
		}
		for prog, a := range d.Permissions[name] {
			if err := ValidRule("permissions."+name+"."+prog, prog, a); err != nil {
				return err
			}
		}
	}
	for svc, hooks := range d.Hooks {
		if svc == "" || len(svc) > 64 {
			return fault.Invalid("hooks", "service names must be 1-64 characters")
		}
		for i, h := range hooks {
			if len(bytes.TrimSpace(h)) == 0 || !json.Valid(h) {
				return fault.Invalid("hooks."+svc+"["+strconv.Itoa(i)+"]", "must be a JSON value")
			}
		}
	}
	return nil
}

// ValidRule checks one program rule.
func ValidRule(field, program string, a Access) error {
	if !IsProgram(program) {
		return fault.Invalid(field, "program must be one of %s", strings.Join(Programs, ", "))
	}
	if a.Kind == AccessInvalid {
		return fault.Invalid(field, "access %s", accessForms)
	}
	return nil
}

// Validate checks one group of the given field path ("groups.admins").
// An empty field names the group's own fields bare ("range"): a group PUT
// whose body is the group.
func (g *Group) Validate(field string) error {
	f := func(sub string) string {
		if field == "" {
			return sub
		}
		return field + "." + sub
	}
	parent := cmp.Or(field, "body")
	set := map[string]bool{
		"secret": g.Secret != "", "secret_configured": g.SecretConfigured,
		"algorithm": g.Algorithm != "", "sources": g.Sources != nil, "claims": g.Claims != nil,
		"username": g.Username != "", "password": g.Password != "", "password_configured": g.PasswordConfigured, "salt": g.Salt != "",
		"range":  g.Range != "",
		"header": g.Header != "", "cookie": g.Cookie != "", "param": g.Param != "", "value": g.Value != "", "value_configured": g.ValueConfigured,
		"containers": g.Containers != nil, "projects": g.Projects != nil,
	}
	allowed := map[string][]string{
		TypeJWT:             {"secret", "secret_configured", "algorithm", "sources", "claims"},
		TypePassword:        {"username", "password", "password_configured", "algorithm", "salt"},
		TypeIP:              {"range"},
		TypeToken:           {"header", "cookie", "param", "value", "value_configured"},
		TypeServiceIdentity: {"containers", "projects"},
	}
	own, ok := allowed[g.Type]
	if !ok {
		if g.Type == "" {
			return fault.Invalid(f("type"), errEmpty)
		}
		return fault.Invalid(f("type"), "must be one of %s", strings.Join(Types, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if set[k] && !slices.Contains(own, k) {
			return fault.Invalid(f(k), "does not apply to a %s group", g.Type)
		}
	}
	for k, v := range map[string]string{"secret": g.Secret, "username": g.Username, "password": g.Password, "salt": g.Salt, "value": g.Value} {
		if len(v) > maxValueLen {
			return fault.Invalid(f(k), "at most %d bytes", maxValueLen)
		}
	}
	for _, m := range []struct {
		name string
		kept bool
		v    string
	}{{"secret", g.SecretConfigured, g.Secret}, {"password", g.PasswordConfigured, g.Password}, {"value", g.ValueConfigured, g.Value}} {
		if m.kept && m.v != "" {
			return fault.Invalid(f(m.name+"_configured"), "give either %s (a new one) or %s_configured true (keep the stored one), not both", m.name, m.name)
		}
	}
	if err := validTools(f("mcp_tools"), g.MCPTools); err != nil {
		return err
	}
	switch g.Type {
	case TypeJWT:
		return g.validJWT(f)
	case TypePassword:
		if g.Username == "" {
			return fault.Invalid(f("username"), errEmpty)
		}
		if strings.ContainsRune(g.Username, ':') {
			return fault.Invalid(f("username"), "must not contain ':' (HTTP Basic)")
		}
		if g.PasswordConfigured {
			// The stored hash (and its salt and algorithm) are kept.
			if g.Salt != "" {
				return fault.Invalid(f("salt"), "goes with a new password; password_configured keeps the stored salt")
			}
			if g.Algorithm != "" && g.Algorithm != PasswordArgon2id && g.Algorithm != PasswordSHA256 {
				return fault.Invalid(f("algorithm"), "must be argon2id or sha256 (or absent for a plaintext password)")
			}
			return nil
		}
		if g.Password == "" {
			return fault.Invalid(f("password"), errEmpty)
		}
		switch g.Algorithm {
		case "":
			if g.Salt != "" {
				return fault.Invalid(f("salt"), "goes only with algorithm sha256: a plaintext password is hashed with argon2id and a random salt of its own")
			}
		case PasswordSHA256:
			if !hexSHA.MatchString(g.Password) {
				return fault.Invalid(f("password"), "with algorithm sha256 must be SHA256(salt + password) as 64 lowercase hex digits")
			}
		case PasswordArgon2id:
			if g.Salt != "" {
				return fault.Invalid(f("salt"), "does not apply to an argon2id hash (the PHC string holds its salt)")
			}
			if _, err := secrets.ParsePasswordHash(g.Password); err != nil {
				return fault.Invalid(f("password"), "with algorithm argon2id %s", err.Error())
			}
		default:
			return fault.Invalid(f("algorithm"), "must be argon2id or sha256 (or absent for a plaintext password)")
		}
	case TypeIP:
		if _, err := ParseRange(g.Range); err != nil {
			return fault.Invalid(f("range"), "%s", err.Error())
		}
	case TypeToken:
		n := 0
		for _, loc := range []struct{ name, v string }{{"header", g.Header}, {"cookie", g.Cookie}, {"param", g.Param}} {
			if loc.v == "" {
				continue
			}
			n++
			if !tokenRe.MatchString(loc.v) {
				return fault.Invalid(f(loc.name), "must be a valid %s name (letters, digits and !#$%%&'*+.^_`|~-, at most 128)", loc.name)
			}
		}
		if n != 1 {
			return fault.Invalid(parent, "exactly one of header, cookie or param must be given, got %d", n)
		}
		if g.Value == "" && !g.ValueConfigured {
			return fault.Invalid(f("value"), errEmpty)
		}
	case TypeServiceIdentity:
		if len(g.Containers)+len(g.Projects) == 0 {
			return fault.Invalid(parent, "name at least one of containers or projects")
		}
		for k, list := range map[string][]string{"containers": g.Containers, "projects": g.Projects} {
			if len(list) > MaxIdents {
				return fault.Invalid(f(k), "at most %d entries", MaxIdents)
			}
			for i, id := range list {
				if !identRe.MatchString(id) {
					return fault.Invalid(f(k)+"["+strconv.Itoa(i)+"]", "must be an id (letters, digits, '_', '.', '-', '*')")
				}
			}
		}
	}
	return nil
}

// validTools checks a group's mcp_tools: absent, or 1 to MaxTools tool
// names and prefix patterns (ValidToolPattern).
func validTools(field string, list []string) error {
	if list == nil {
		return nil
	}
	if len(list) == 0 {
		return fault.Invalid(field, "must name at least one tool (leave mcp_tools out to allow every tool)")
	}
	if len(list) > MaxTools {
		return fault.Invalid(field, "at most %d entries", MaxTools)
	}
	for i, p := range list {
		if err := ValidToolPattern(field+"["+strconv.Itoa(i)+"]", p); err != nil {
			return err
		}
	}
	return nil
}

// ValidToolPattern checks one entry of mcp_tools: a tool name (1-128
// letters, digits, '_', '.', '-', the characters MCP tool names use), or a
// prefix of one followed by a single '*' (files_*; '*' alone is every
// tool).
func ValidToolPattern(field, p string) error {
	if p == "" {
		return fault.Invalid(field, "must not be empty: a tool name or a prefix ending in '*' (files_*)")
	}
	name, glob := strings.CutSuffix(p, "*")
	if strings.ContainsRune(name, '*') {
		return fault.Invalid(field, "'*' may only end a pattern, once (files_*), got %q", clip(p))
	}
	if !toolRe.MatchString(name) || (!glob && name == "") {
		return fault.Invalid(field, "must be a tool name of at most 128 letters, digits, '_', '.' or '-', optionally ending in '*', got %q", clip(p))
	}
	return nil
}

func (g *Group) validJWT(f func(string) string) error {
	if g.Secret == "" && !g.SecretConfigured {
		return fault.Invalid(f("secret"), errEmpty)
	}
	switch g.Algorithm {
	case "HS256":
	case "RS256", "ES256":
		if g.SecretConfigured {
			break // the stored key is checked once Unmask put it back
		}
		if _, err := ParsePublicKey(g.Algorithm, g.Secret); err != nil {
			return fault.Invalid(f("secret"), "%s", err.Error())
		}
	case "":
		return fault.Invalid(f("algorithm"), errEmpty)
	default:
		return fault.Invalid(f("algorithm"), "must be HS256, RS256 or ES256")
	}
	if len(g.Sources) == 0 {
		return fault.Invalid(f("sources"), "must list at least one source (header:<Name> or cookie:<Name>)")
	}
	if len(g.Sources) > MaxSources {
		return fault.Invalid(f("sources"), "at most %d sources", MaxSources)
	}
	for i, s := range g.Sources {
		kind, name, ok := strings.Cut(s, ":")
		if !ok || (kind != "header" && kind != "cookie") || !tokenRe.MatchString(name) {
			return fault.Invalid(f("sources")+"["+strconv.Itoa(i)+"]", "must be header:<Name> or cookie:<Name>")
		}
	}
	if len(g.Claims) > MaxClaims {
		return fault.Invalid(f("claims"), "at most %d claims", MaxClaims)
	}
	for _, k := range slices.Sorted(maps.Keys(g.Claims)) {
		switch g.Claims[k].(type) {
		case string, float64, bool, json.Number:
		default:
			return fault.Invalid(f("claims."+k), "must be a string, number or boolean")
		}
	}
	return nil
}

// Password algorithms of a stored password group.
const (
	PasswordArgon2id = "argon2id" // password is a PHC string (platform/secrets.HashPassword)
	PasswordSHA256   = "sha256"   // password is hex(SHA256(salt + password)), accepted pre-hashed
)

// Normalize hashes plaintext passwords: a password group without
// algorithm gets algorithm argon2id and password = the argon2id PHC string
// (platform/secrets.HashPassword; its random salt is inside). Call after
// Validate.
func (d *Document) Normalize() error {
	for name, g := range d.Groups {
		if err := g.Normalize(); err != nil {
			return err
		}
		d.Groups[name] = g
	}
	return nil
}

// Normalize hashes a plaintext password group (see Document.Normalize).
func (g *Group) Normalize() error {
	if g.Type != TypePassword || g.Algorithm != "" || g.PasswordConfigured {
		return nil
	}
	h, err := secrets.HashPassword(g.Password)
	if err != nil {
		return err
	}
	g.Password, g.Algorithm = h, PasswordArgon2id
	return nil
}

// HashPassword is hex(SHA256(salt + password)), the pre-hashed form a
// password group with algorithm sha256 holds.
func HashPassword(salt, password string) string {
	sum := sha256.Sum256([]byte(salt + password))
	return hex.EncodeToString(sum[:])
}

// Masked reports whether the group stands for a stored secret it does not
// carry (a <field>_configured without the field).
func (g *Group) Masked() bool {
	return g.SecretConfigured || g.PasswordConfigured || g.ValueConfigured
}

// Secrets lists the group's secret values (empty ones left out): what a
// masked document must not contain.
func (g *Group) Secrets() []string {
	var all []string
	switch {
	case g.Type == TypeJWT && g.Algorithm == "HS256":
		all = []string{g.Secret}
	case g.Type == TypePassword:
		all = []string{g.Password, g.Salt}
	case g.Type == TypeToken:
		all = []string{g.Value}
	}
	var out []string
	for _, v := range all {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Mask is the group as people see it: an HS256 secret, a password's hash
// and salt and a token's value replaced by <field>_configured true. RS256
// and ES256 keys are public and stay.
func (g Group) Mask() Group {
	switch g.Type {
	case TypeJWT:
		if g.Algorithm == "HS256" && g.Secret != "" {
			g.Secret, g.SecretConfigured = "", true
		}
	case TypePassword:
		if g.Password != "" {
			g.Password, g.Salt, g.PasswordConfigured = "", "", true
		}
	case TypeToken:
		if g.Value != "" {
			g.Value, g.ValueConfigured = "", true
		}
	}
	return g
}

// Mask is a copy of the document with every group masked (Group.Mask).
func (d *Document) Mask() *Document {
	out := *d
	out.Groups = make(map[string]Group, len(d.Groups))
	for name, g := range d.Groups {
		out.Groups[name] = g.Mask()
	}
	return &out
}

// Unmask puts the stored secret back wherever g carries
// <field>_configured instead of it: stored must be the same group (name
// and type) of the stored document, nil when there is none. field names
// the group in a refusal ("groups.admins"; "" for a group body).
func (g *Group) Unmask(field string, stored *Group) error {
	f := func(sub string) string {
		if field == "" {
			return sub
		}
		return field + "." + sub
	}
	missing := func(name string) error {
		return fault.Invalid(f(name+"_configured"), "keeps a stored %s, and no %s group of this name holds one: send %s", name, g.Type, name)
	}
	if stored != nil && stored.Type != g.Type {
		stored = nil
	}
	if g.SecretConfigured {
		if stored == nil || stored.Secret == "" {
			return missing("secret")
		}
		g.Secret, g.SecretConfigured = stored.Secret, false
	}
	if g.PasswordConfigured {
		if stored == nil || stored.Password == "" {
			return missing("password")
		}
		g.Password, g.Salt, g.Algorithm, g.PasswordConfigured = stored.Password, stored.Salt, stored.Algorithm, false
	}
	if g.ValueConfigured {
		if stored == nil || stored.Value == "" {
			return missing("value")
		}
		g.Value, g.ValueConfigured = stored.Value, false
	}
	return g.Validate(field)
}

// Unmask is Group.Unmask for every group of d against the stored document
// (nil when none exists).
func (d *Document) Unmask(stored *Document) error {
	for _, name := range d.GroupNames() {
		g := d.Groups[name]
		if !g.Masked() {
			continue
		}
		var sg *Group
		if stored != nil {
			if s, ok := stored.Groups[name]; ok {
				sg = &s
			}
		}
		if err := g.Unmask("groups."+name, sg); err != nil {
			return err
		}
		d.Groups[name] = g
	}
	return nil
}

// Masked reports whether any group of d is masked.
func (d *Document) Masked() bool {
	for _, g := range d.Groups {
		if g.Masked() {
			return true
		}
	}
	return false
}

// GroupNames lists the document's group names in order.
func (d *Document) GroupNames() []string { return slices.Sorted(maps.Keys(d.Groups)) }
