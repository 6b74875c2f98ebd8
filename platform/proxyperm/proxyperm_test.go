package proxyperm_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"deckhand/platform/fault"
	"deckhand/platform/openapi"
	"deckhand/platform/proxyperm"
	"deckhand/platform/secrets"
)

func pemKey(t testing.TB, pub any) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func rsaPEM(t testing.TB, bits int) string {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return pemKey(t, &k.PublicKey)
}

func ecPEM(t testing.TB, c elliptic.Curve) string {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pemKey(t, &k.PublicKey)
}

func docJSON(groups, perms string) string {
	return `{"project":"p1","container":"c1","groups":` + groups + `,"permissions":` + perms + `}`
}

// field is the field a 400 names, or "" when err is no INVALID error.
func field(err error) string {
	var pe *fault.Error
	if errors.As(err, &pe) && pe.Code == fault.CodeInvalid {
		return pe.Field
	}
	return ""
}

func TestDocumentRejectsBadInputNamingFieldAndRule(t *testing.T) {
	t.Parallel()
	rsa1024 := rsaPEM(t, 1024)
	p384 := ecPEM(t, elliptic.P384())
	rsaOK := rsaPEM(t, 2048)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	cases := []struct {
		name, groups, perms, field, rule string
	}{
		{"invalid CIDR", `{"office":{"type":"ip","range":"10.0.0.0/33"}}`, `{}`, "groups.office.range", "m 0-32"},
		{"CIDR without mask", `{"office":{"type":"ip","range":"10.0.0.1"}}`, `{}`, "groups.office.range", "no /m"},
		{"IPv6 CIDR", `{"office":{"type":"ip","range":"::1/128"}}`, `{}`, "groups.office.range", "IPv4"},
		{"two token locations", `{"bot":{"type":"token","header":"X-Key","param":"key","value":"v"}}`, `{}`, "groups.bot", "exactly one of header, cookie or param"},
		{"no token location", `{"bot":{"type":"token","value":"v"}}`, `{}`, "groups.bot", "exactly one"},
		{"token without value", `{"bot":{"type":"token","cookie":"k"}}`, `{}`, "groups.bot.value", "required"},
		{"unparsable PEM", `{"sso":{"type":"jwt","algorithm":"RS256","secret":"-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----","sources":["header:Authorization"]}}`, `{}`, "groups.sso.secret", "parsable SPKI public key"},
		{"not PEM at all", `{"sso":{"type":"jwt","algorithm":"ES256","secret":"shh","sources":["header:A"]}}`, `{}`, "groups.sso.secret", "no PEM block"},
		{"short RSA key", `{"sso":{"type":"jwt","algorithm":"RS256","secret":` + q(rsa1024) + `,"sources":["header:A"]}}`, `{}`, "groups.sso.secret", "2048"},
		{"ES256 wrong curve", `{"sso":{"type":"jwt","algorithm":"ES256","secret":` + q(p384) + `,"sources":["header:A"]}}`, `{}`, "groups.sso.secret", "P-256"},
		{"RSA key for ES256", `{"sso":{"type":"jwt","algorithm":"ES256","secret":` + q(rsaOK) + `,"sources":["header:A"]}}`, `{}`, "groups.sso.secret", "P-256"},
		{"jwt bad algorithm", `{"sso":{"type":"jwt","algorithm":"none","secret":"s","sources":["header:A"]}}`, `{}`, "groups.sso.algorithm", "HS256"},
		{"jwt bad source", `{"sso":{"type":"jwt","algorithm":"HS256","secret":"s","sources":["query:a"]}}`, `{}`, "groups.sso.sources[0]", "header:<Name>"},
		{"jwt no sources", `{"sso":{"type":"jwt","algorithm":"HS256","secret":"s"}}`, `{}`, "groups.sso.sources", "at least one"},
		{"jwt object claim", `{"sso":{"type":"jwt","algorithm":"HS256","secret":"s","sources":["cookie:t"],"claims":{"a":{}}}}`, `{}`, "groups.sso.claims.a", "string, number or boolean"},
		{"password prehash not hex", `{"u":{"type":"password","username":"bob","password":"Plain","algorithm":"sha256"}}`, `{}`, "groups.u.password", "64 lowercase hex"},
		{"password bad algorithm", `{"u":{"type":"password","username":"bob","password":"x","algorithm":"md5"}}`, `{}`, "groups.u.algorithm", "sha256"},
		{"password no username", `{"u":{"type":"password","password":"x"}}`, `{}`, "groups.u.username", "required"},
		{"foreign field", `{"u":{"type":"ip","range":"1.2.3.4/32","value":"x"}}`, `{}`, "groups.u.value", "does not apply"},
		{"unknown type", `{"u":{"type":"magic"}}`, `{}`, "groups.u.type", "one of"},
		{"bad group name", `{"-x":{"type":"ip","range":"1.2.3.4/32"}}`, `{}`, "groups.-x", "letters"},
		{"service identity empty", `{"s":{"type":"service-identity"}}`, `{}`, "groups.s", "at least one"},
		{"range 9-3", `{}`, `{"g":{"http":"9-3"}}`, "permissions.g.http", "from must not exceed to"},
		{"port 70000", `{}`, `{"g":{"http":70000}}`, "permissions.g.http", "out of range 1-65535"},
		{"port 0 in array", `{}`, `{"g":{"http":[80,0]}}`, "permissions.g.http", "[1] port 0 is out of range"},
		{"fractional port", `{}`, `{"g":{"http":80.5}}`, "permissions.g.http", "integer"},
		{"empty ports", `{}`, `{"g":{"http":[]}}`, "permissions.g.http", "at least one port"},
		{"word access", `{}`, `{"g":{"http":"all"}}`, "permissions.g.http", "must be true, false"},
		{"unknown program", `{}`, `{"g":{"ftp":true}}`, "permissions.g.ftp", "program must be one of"},
		{"misspelt mcp_tools", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tool":["files_*"]}}`, `{}`, "groups.g.mcp_tool", "unknown field"},
		{"mcp_tools a string", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":"files_*"}}`, `{}`, "groups.g.mcp_tools", "array"},
		{"mcp_tools an object", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":{"files_*":true}}}`, `{}`, "groups.g.mcp_tools", "array"},
		{"mcp_tools a number entry", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":["files_read",7]}}`, `{}`, "groups.g.mcp_tools", "string"},
		{"mcp_tools empty", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":[]}}`, `{}`, "groups.g.mcp_tools", "at least one tool"},
		{"mcp_tools empty name", `{"g":{"type":"token","header":"X-K","value":"v","mcp_tools":["files_read",""]}}`, `{}`, "groups.g.mcp_tools[1]", "must not be empty"},
		{"mcp_tools leading glob", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":["*_read"]}}`, `{}`, "groups.g.mcp_tools[0]", "'*' may only end a pattern"},
		{"mcp_tools double glob", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":["files**"]}}`, `{}`, "groups.g.mcp_tools[0]", "'*' may only end a pattern"},
		{"mcp_tools inner glob", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":["files_*_x"]}}`, `{}`, "groups.g.mcp_tools[0]", "'*' may only end a pattern"},
		{"mcp_tools space", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":["files read"]}}`, `{}`, "groups.g.mcp_tools[0]", "tool name"},
		{"mcp_tools comma", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":["files_read,process_run"]}}`, `{}`, "groups.g.mcp_tools[0]", "tool name"},
		{"mcp_tools too long", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":["` + strings.Repeat("a", 129) + `"]}}`, `{}`, "groups.g.mcp_tools[0]", "at most 128"},
		{"mcp_tools too many", `{"g":{"type":"ip","range":"1.2.3.4/32","mcp_tools":[` + strings.Repeat(`"t",`, 256) + `"t"]}}`, `{}`, "groups.g.mcp_tools", "at most 256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := proxyperm.Decode([]byte(docJSON(c.groups, c.perms)))
			if field(err) != c.field || !strings.Contains(err.Error(), c.rule) {
				t.Fatalf("err %v (field %q), want field %q and rule %q", err, field(err), c.field, c.rule)
			}
		})
	}
	for _, missing := range []struct{ body, field string }{
		{`{"container":"c","groups":{},"permissions":{}}`, "project"},
		{`{"project":"p","groups":{},"permissions":{}}`, "container"},
		{`{"project":"p","container":"c","permissions":{}}`, "groups"},
		{`{"project":"p","container":"c","groups":{}}`, "permissions"},
		{`{"project":"p","container":"c","groups":{},"permissions":{},"default":"maybe"}`, "default"},
		{`{"project":"p","container":"c","groups":{},"permissions":{},"extra":1}`, "extra"},
	} {
		if _, err := proxyperm.Decode([]byte(missing.body)); field(err) != missing.field {
			t.Errorf("%s: err %v, want field %s", missing.body, err, missing.field)
		}
	}
}

func TestDocumentDefaultsHashingAndCompile(t *testing.T) {
	t.Parallel()
	rsaOK, ecOK := rsaPEM(t, 2048), ecPEM(t, elliptic.P256())
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	pre := proxyperm.HashPassword("s1", "pw")
	d, err := proxyperm.Decode([]byte(docJSON(`{
		"hs":{"type":"jwt","algorithm":"HS256","secret":"k","sources":["header:Authorization","cookie:tok"],"claims":{"role":"ops","n":3,"b":true}},
		"rs":{"type":"jwt","algorithm":"RS256","secret":`+q(rsaOK)+`,"sources":["header:A"]},
		"es":{"type":"jwt","algorithm":"ES256","secret":`+q(ecOK)+`,"sources":["header:A"]},
		"plain":{"type":"password","username":"bob","password":"hunter2"},
		"prehashed":{"type":"password","username":"al","password":"`+pre+`","algorithm":"sha256","salt":"s1"},
		"office":{"type":"ip","range":"10.1.2.3/16"},
		"bot":{"type":"token","param":"key","value":"v"},
		"peer":{"type":"service-identity","projects":["p1"]}}`,
		`{"office":{"http":[80,443],"terminal":true,"ssh":22,"files":"8000-8100","exec":"*","services":false},"gone":{"http":true}}`)))
	if err != nil {
		t.Fatal(err)
	}
	if d.Default != "deny" || !d.Proxy() {
		t.Fatalf("defaults: %q %v", d.Default, d.Proxy())
	}
	if err := d.Normalize(); err != nil {
		t.Fatal(err)
	}
	if g := d.Groups["plain"]; !secrets.CheckPassword(g.Password, "hunter2") || g.Algorithm != "argon2id" || g.Salt != "" {
		t.Fatalf("plaintext not hashed with argon2id: %+v", g)
	}
	if g := d.Groups["prehashed"]; g.Password != pre {
		t.Fatalf("pre-hashed password changed: %+v", g)
	}
	// Normalizing a normalized document changes nothing (a PUT of a GET).
	raw, _ := json.Marshal(d)
	d2, err := proxyperm.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	_ = d2.Normalize()
	raw2, _ := json.Marshal(d2)
	if string(raw) != string(raw2) {
		t.Fatalf("round trip changed the document:\n%s\n%s", raw, raw2)
	}
	if !strings.Contains(string(raw), `"files":"8000-8100"`) || !strings.Contains(string(raw), `"http":[80,443]`) {
		t.Fatalf("access forms not kept: %s", raw)
	}
	p, err := proxyperm.Compile(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 8 || p.Groups[0].Name != "bot" || p.Groups[0].Location != "param" {
		t.Fatalf("compiled groups: %+v", p.Groups)
	}
	for _, g := range p.Groups {
		if g.Name == "office" && g.Prefix.String() != "10.1.0.0/16" {
			t.Fatalf("prefix %v", g.Prefix)
		}
	}
	for _, c := range []struct {
		prog string
		port int
		want bool
	}{{"http", 80, true}, {"http", 8080, false}, {"terminal", 0, true}, {"ssh", 22, true}, {"ssh", 23, false},
		{"files", 8000, true}, {"files", 8100, true}, {"files", 8101, false}, {"exec", 1, true}, {"services", 80, false}, {"notifications", 1, false}} {
		if got := p.Allows([]string{"office"}, c.prog, c.port); got != c.want {
			t.Errorf("%s:%d = %v, want %v", c.prog, c.port, got, c.want)
		}
	}
	if p.Allows(nil, "http", 80) || !p.Allows([]string{"gone"}, "http", 1) {
		t.Fatal("default deny / rules without a group")
	}
	if _, err := proxyperm.Compile(&proxyperm.Document{Project: "p", Container: "c", Permissions: map[string]proxyperm.Rules{},
		Groups: map[string]proxyperm.Group{"u": {Type: "password", Username: "u", Password: "plain"}}}); err == nil {
		t.Fatal("compiled an unhashed password group")
	}
}

func TestETag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"file:v0": 0, "file:v12": 12, `"file:v3"`: 3} {
		if n, ok := proxyperm.ParseETag(in); !ok || n != want {
			t.Errorf("%q = %d %v", in, n, ok)
		}
	}
	for _, bad := range []string{"", "file:v", "v1", "file:v-1", "file:v1x", "W/\"file:v1\"", "file:v99999999999999999999"} {
		if _, ok := proxyperm.ParseETag(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	if proxyperm.ETag(7) != "file:v7" {
		t.Fatal(proxyperm.ETag(7))
	}
}

// The OpenAPI schema of a document shows access values in their forms, not
// the Go struct behind them.
func TestAccessSchema(t *testing.T) {
	t.Parallel()
	s := openapi.Schema(proxyperm.Document{})
	perms := s["properties"].(map[string]any)["permissions"].(map[string]any)
	access := perms["additionalProperties"].(map[string]any)["additionalProperties"].(map[string]any)
	if forms, ok := access["oneOf"].([]any); !ok || len(forms) != 4 {
		t.Fatalf("access schema: %v", access)
	}
}

// A plaintext password takes no salt of its own (argon2id draws one); an
// argon2id hash must be a PHC string within the parameter limits.
func TestPasswordForms(t *testing.T) {
	t.Parallel()
	phc, err := secrets.HashPassword("pw")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body, field string
	}{
		{`{"type":"password","username":"u","password":"p","salt":"s"}`, "groups.g.salt"},
		{`{"type":"password","username":"u","password":"$argon2id$v=19$m=9999999,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA","algorithm":"argon2id"}`, "groups.g.password"},
		{`{"type":"password","username":"u","password":"nope","algorithm":"argon2id"}`, "groups.g.password"},
		{`{"type":"password","username":"u","password":"` + phc + `","algorithm":"argon2id","salt":"s"}`, "groups.g.salt"},
		{`{"type":"password","username":"u","password":"p","algorithm":"md5"}`, "groups.g.algorithm"},
		{`{"type":"password","username":"u","password":"p","password_configured":true}`, "groups.g.password_configured"},
		{`{"type":"token","header":"X","value":"v","value_configured":true}`, "groups.g.value_configured"},
		{`{"type":"ip","range":"10.0.0.0/8","value_configured":true}`, "groups.g.value_configured"},
	} {
		var g proxyperm.Group
		if err := json.Unmarshal([]byte(c.body), &g); err != nil {
			t.Fatal(err)
		}
		if err := g.Validate("groups.g"); field(err) != c.field {
			t.Errorf("%s: %v, want a refusal naming %s", c.body, err, c.field)
		}
	}
	g := proxyperm.Group{Type: "password", Username: "u", Password: phc, Algorithm: "argon2id"}
	if err := g.Validate("g"); err != nil {
		t.Fatalf("a pre-hashed argon2id password: %v", err)
	}
}

// Mask hides every secret and Unmask puts the stored one back, so a
// document read by a person PUTs back unchanged; a masked field with
// nothing stored behind it is refused naming the field.
func TestMaskUnmask(t *testing.T) {
	t.Parallel()
	ec := ecPEM(t, elliptic.P256())
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	d, err := proxyperm.Decode([]byte(docJSON(`{
		"hs":{"type":"jwt","algorithm":"HS256","secret":"hs-secret-1","sources":["header:A"]},
		"es":{"type":"jwt","algorithm":"ES256","secret":`+q(ec)+`,"sources":["header:A"]},
		"pw":{"type":"password","username":"u","password":"plain-pw"},
		"pre":{"type":"password","username":"p","password":"`+proxyperm.HashPassword("salt-9", "x")+`","algorithm":"sha256","salt":"salt-9"},
		"tok":{"type":"token","header":"X-K","value":"tok-value-1"},
		"lan":{"type":"ip","range":"10.0.0.0/8"}}`, `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Normalize(); err != nil {
		t.Fatal(err)
	}
	var secretsOf []string
	for _, g := range d.Groups {
		secretsOf = append(secretsOf, g.Secrets()...)
	}
	if len(secretsOf) != 5 { // hs secret, pw hash, pre hash and salt, token value
		t.Fatalf("secrets %q", secretsOf)
	}
	m := d.Mask()
	raw, _ := json.Marshal(m)
	for _, sec := range secretsOf {
		if strings.Contains(string(raw), sec) {
			t.Fatalf("masked document holds %q: %s", sec, raw)
		}
	}
	for _, want := range []string{`"secret_configured":true`, `"password_configured":true`, `"value_configured":true`, `BEGIN PUBLIC KEY`} {
		if !strings.Contains(string(raw), want) {
			t.Fatalf("masked document lacks %s: %s", want, raw)
		}
	}
	if d.Groups["hs"].Secret != "hs-secret-1" {
		t.Fatal("Mask changed the original")
	}
	if _, err := proxyperm.Compile(m); err == nil {
		t.Fatal("a masked document compiled")
	}
	back, err := proxyperm.Decode(raw)
	if err != nil {
		t.Fatalf("masked document does not decode: %v", err)
	}
	if err := back.Unmask(d); err != nil {
		t.Fatal(err)
	}
	if err := back.Normalize(); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(d)
	b, _ := json.Marshal(back)
	if string(a) != string(b) {
		t.Fatalf("masked round trip changed the document:\n%s\n%s", a, b)
	}
	// Nothing stored behind a masked field: refused naming it.
	lone, _ := proxyperm.Decode(raw)
	delete(d.Groups, "tok")
	g := d.Groups["pw"]
	g.Type = "token"
	d.Groups["pw"] = g
	if err := lone.Unmask(d); field(err) != "groups.pw.password_configured" {
		t.Fatalf("unmask against a group of another type: %v", err)
	}
	lone, _ = proxyperm.Decode(raw)
	if err := lone.Unmask(nil); field(err) == "" {
		t.Fatalf("unmask without a stored document: %v", err)
	}
}
