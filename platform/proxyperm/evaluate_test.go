package proxyperm_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"deckhand/platform/proxyperm"
	"deckhand/platform/signing"
)

var evalNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// compileJSON decodes, normalizes and compiles a document.
func compileJSON(t testing.TB, raw string) *proxyperm.Policy {
	t.Helper()
	d, err := proxyperm.Decode([]byte(raw))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if err := d.Normalize(); err != nil {
		t.Fatal(err)
	}
	p, err := proxyperm.Compile(d)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

type req struct {
	program string
	port    int
	src     string
	headers map[string]string
	cookies map[string]string
	params  map[string]string
}

func (r req) facts() proxyperm.Facts {
	src := r.src
	if src == "" {
		src = "198.51.100.7"
	}
	get := func(m map[string]string) func(string) string {
		return func(n string) string { return m[n] }
	}
	hdr := map[string]string{}
	for k, v := range r.headers {
		hdr[k] = v
	}
	a := netip.MustParseAddr(src)
	return proxyperm.Facts{Program: r.program, Port: r.port, Source: a, Loopback: a.IsLoopback(), Audience: "c1",
		Header: get(hdr), Cookie: get(r.cookies), Param: get(r.params), Now: evalNow}
}

type keys struct {
	rsa     *rsa.PrivateKey
	rsaPEM  string
	ec      *ecdsa.PrivateKey
	ecPEM   string
	edPub   ed25519.PublicKey
	edPriv  ed25519.PrivateKey
	otherEd ed25519.PrivateKey
}

func newKeys(t testing.TB) *keys {
	k := &keys{}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	k.rsaPEM = pemKey(t, &k.rsa.PublicKey)
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	k.ecPEM = pemKey(t, &k.ec.PublicKey)
	k.edPub, k.edPriv, _ = ed25519.GenerateKey(rand.Reader)
	_, k.otherEd, _ = ed25519.GenerateKey(rand.Reader)
	return k
}

func sign(t testing.TB, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func containerClaim(t testing.TB, priv ed25519.PrivateKey, c proxyperm.ContainerClaim) string {
	raw, _ := json.Marshal(c)
	b64 := base64.RawURLEncoding.EncodeToString(raw)
	return b64 + "." + hex.EncodeToString(ed25519.Sign(priv, []byte(b64)))
}

func verifierFor(pub ed25519.PublicKey) proxyperm.ClaimVerifier {
	return func(p, s, _ string) ([]byte, error) {
		var raw json.RawMessage
		if err := signing.VerifyClaim(signing.Claim{PayloadB64: p, SignatureHex: s}, &raw, pub); err != nil {
			return nil, err
		}
		return raw, nil
	}
}

func evalDoc(k *keys) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return `{"project":"p1","container":"c1","default":"deny","groups":{
		"hs":{"type":"jwt","algorithm":"HS256","secret":"hs-secret","sources":["header:Authorization","cookie:session"],"claims":{"role":"admin","level":3,"staff":true}},
		"rs":{"type":"jwt","algorithm":"RS256","secret":` + q(k.rsaPEM) + `,"sources":["header:X-RS"]},
		"es":{"type":"jwt","algorithm":"ES256","secret":` + q(k.ecPEM) + `,"sources":["cookie:es"]},
		"pw":{"type":"password","username":"alice","password":"correct horse"},
		"pre":{"type":"password","username":"carol","password":"` + proxyperm.HashPassword("s4lt", "old horse") + `","algorithm":"sha256","salt":"s4lt"},
		"office":{"type":"ip","range":"10.1.2.0/24"},
		"host":{"type":"ip","range":"192.0.2.9/32"},
		"hdrtok":{"type":"token","header":"X-Key","value":"k-123"},
		"cktok":{"type":"token","cookie":"ck","value":"c-456"},
		"qtok":{"type":"token","param":"key","value":"q-789"},
		"peers":{"type":"service-identity","containers":["c9","w*"],"projects":["p7"]},
		"viewer":{"type":"token","header":"X-View","value":"v"}
	},"permissions":{
		"hs":{"terminal":true},
		"rs":{"files":"*"},
		"es":{"exec":8080},
		"pw":{"services":[7701,7702]},
		"pre":{"services":7701},
		"office":{"http":"8000-8100"},
		"host":{"ssh":true},
		"hdrtok":{"notifications":true},
		"cktok":{"terminal":true},
		"qtok":{"files":true},
		"peers":{"services":true},
		"viewer":{"terminal":false}
	}}`
}

func TestEvaluateRequestTable(t *testing.T) {
	t.Parallel()
	k := newKeys(t)
	p := compileJSON(t, evalDoc(k))
	verify := verifierFor(k.edPub)
	hsClaims := func(extra map[string]any) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "u1", "role": "admin", "level": 3, "staff": true, "exp": evalNow.Add(time.Hour).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	hs := func(extra map[string]any) string {
		return sign(t, jwt.SigningMethodHS256, []byte("hs-secret"), hsClaims(extra))
	}
	rs := sign(t, jwt.SigningMethodRS256, k.rsa, jwt.MapClaims{"sub": "r1"})
	es := sign(t, jwt.SigningMethodES256, k.ec, jwt.MapClaims{"sub": "e1"})
	// The classic confusion: an HS256 token keyed with the RS256 group's PEM.
	confused := sign(t, jwt.SigningMethodHS256, []byte(k.rsaPEM), jwt.MapClaims{"sub": "r1"})
	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, hsClaims(nil))
	basic := func(u, pw string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+pw)) }
	claimFor := func(c, pr, aud string, at time.Time, life time.Duration) string {
		return containerClaim(t, k.edPriv, proxyperm.ContainerClaim{Type: "container", Container: c, Project: pr, Audience: aud,
			IssuedAt: at.Unix(), Expires: at.Add(life).Unix()})
	}
	claim := func(c, pr string, at time.Time) string { return claimFor(c, pr, "c1", at, 5*time.Minute) }
	H := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name  string
		r     req
		want  proxyperm.Outcome
		group string
	}{
		{"no credential", req{program: "terminal", port: 7703}, proxyperm.Unauthorized, ""},
		{"jwt HS256 bearer header", req{program: "terminal", headers: H("Authorization", "Bearer "+hs(nil))}, proxyperm.Allowed, "hs"},
		{"jwt HS256 from cookie", req{program: "terminal", cookies: H("session", hs(nil))}, proxyperm.Allowed, "hs"},
		{"jwt claim mismatch (string)", req{program: "terminal", headers: H("Authorization", "Bearer "+hs(map[string]any{"role": "user"}))}, proxyperm.Unauthorized, ""},
		{"jwt claim mismatch (number)", req{program: "terminal", headers: H("Authorization", "Bearer "+hs(map[string]any{"level": 4}))}, proxyperm.Unauthorized, ""},
		{"jwt claim mismatch (type)", req{program: "terminal", headers: H("Authorization", "Bearer "+hs(map[string]any{"staff": "true"}))}, proxyperm.Unauthorized, ""},
		{"jwt claim missing", req{program: "terminal", headers: H("Authorization", "Bearer "+sign(t, jwt.SigningMethodHS256, []byte("hs-secret"), jwt.MapClaims{"role": "admin"}))}, proxyperm.Unauthorized, ""},
		{"jwt expired", req{program: "terminal", headers: H("Authorization", "Bearer "+hs(map[string]any{"exp": evalNow.Add(-time.Second).Unix()}))}, proxyperm.Unauthorized, ""},
		{"jwt not yet valid", req{program: "terminal", headers: H("Authorization", "Bearer "+hs(map[string]any{"nbf": evalNow.Add(time.Minute).Unix()}))}, proxyperm.Unauthorized, ""},
		{"jwt wrong secret", req{program: "terminal", headers: H("Authorization", "Bearer "+sign(t, jwt.SigningMethodHS256, []byte("other"), hsClaims(nil)))}, proxyperm.Unauthorized, ""},
		{"jwt alg none", req{program: "terminal", headers: H("Authorization", "Bearer "+none)}, proxyperm.Unauthorized, ""},
		{"jwt garbage", req{program: "terminal", headers: H("Authorization", "Bearer a.b.c")}, proxyperm.Unauthorized, ""},
		{"jwt RS256", req{program: "files", headers: H("X-RS", rs)}, proxyperm.Allowed, "rs"},
		{"jwt HS256 token against RS256 group", req{program: "files", headers: H("X-RS", confused)}, proxyperm.Unauthorized, ""},
		{"jwt ES256 token against RS256 group", req{program: "files", headers: H("X-RS", es)}, proxyperm.Unauthorized, ""},
		{"jwt ES256 from cookie", req{program: "exec", port: 8080, cookies: H("es", es)}, proxyperm.Allowed, "es"},
		{"jwt ES256 wrong port: matched not allowed", req{program: "exec", port: 8081, cookies: H("es", es)}, proxyperm.Forbidden, "es"},
		{"jwt RS256 token in ES256 cookie", req{program: "exec", port: 8080, cookies: H("es", rs)}, proxyperm.Unauthorized, ""},
		{"jwt right group wrong program", req{program: "files", headers: H("Authorization", "Bearer "+hs(nil))}, proxyperm.Forbidden, "hs"},
		{"password ok (port in list)", req{program: "services", port: 7702, headers: H("Authorization", basic("alice", "correct horse"))}, proxyperm.Allowed, "pw"},
		{"password port not in list", req{program: "services", port: 7703, headers: H("Authorization", basic("alice", "correct horse"))}, proxyperm.Forbidden, "pw"},
		{"password wrong", req{program: "services", port: 7701, headers: H("Authorization", basic("alice", "wrong"))}, proxyperm.Unauthorized, ""},
		{"password wrong user", req{program: "services", port: 7701, headers: H("Authorization", basic("bob", "correct horse"))}, proxyperm.Unauthorized, ""},
		{"password again (remembered)", req{program: "services", port: 7701, headers: H("Authorization", basic("alice", "correct horse"))}, proxyperm.Allowed, "pw"},
		{"password of another user", req{program: "services", port: 7701, headers: H("Authorization", basic("carol", "correct horse"))}, proxyperm.Unauthorized, ""},
		{"pre-hashed sha256 password", req{program: "services", port: 7701, headers: H("Authorization", basic("carol", "old horse"))}, proxyperm.Allowed, "pre"},
		{"pre-hashed sha256 password wrong", req{program: "services", port: 7701, headers: H("Authorization", basic("carol", "old horse!"))}, proxyperm.Unauthorized, ""},
		{"password malformed basic", req{program: "services", port: 7701, headers: H("Authorization", "Basic !!!")}, proxyperm.Unauthorized, ""},
		{"password basic without colon", req{program: "services", port: 7701, headers: H("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice")))}, proxyperm.Unauthorized, ""},
		{"ip in range, port in range low edge", req{program: "http", port: 8000, src: "10.1.2.0"}, proxyperm.Allowed, "office"},
		{"ip in range, port in range high edge", req{program: "http", port: 8100, src: "10.1.2.255"}, proxyperm.Allowed, "office"},
		{"ip in range, port past range", req{program: "http", port: 8101, src: "10.1.2.3"}, proxyperm.Forbidden, "office"},
		{"ip in range, port before range", req{program: "http", port: 7999, src: "10.1.2.3"}, proxyperm.Forbidden, "office"},
		{"ip just below range", req{program: "http", port: 8000, src: "10.1.1.255"}, proxyperm.Unauthorized, ""},
		{"ip just above range", req{program: "http", port: 8000, src: "10.1.3.0"}, proxyperm.Unauthorized, ""},
		{"ip IPv4-mapped IPv6 in range", req{program: "http", port: 8000, src: "::ffff:10.1.2.4"}, proxyperm.Allowed, "office"},
		{"ip /32 exact", req{program: "ssh", port: 22, src: "192.0.2.9"}, proxyperm.Allowed, "host"},
		{"ip /32 neighbour", req{program: "ssh", port: 22, src: "192.0.2.10"}, proxyperm.Unauthorized, ""},
		{"token header", req{program: "notifications", headers: H("X-Key", "k-123")}, proxyperm.Allowed, "hdrtok"},
		{"token header wrong", req{program: "notifications", headers: H("X-Key", "k-124")}, proxyperm.Unauthorized, ""},
		{"token header prefix", req{program: "notifications", headers: H("X-Key", "k-12")}, proxyperm.Unauthorized, ""},
		{"token cookie", req{program: "terminal", cookies: H("ck", "c-456")}, proxyperm.Allowed, "cktok"},
		{"token param", req{program: "files", params: H("key", "q-789")}, proxyperm.Allowed, "qtok"},
		{"token param in header does not count", req{program: "files", headers: H("key", "q-789")}, proxyperm.Unauthorized, ""},
		{"access false: matched, denied", req{program: "terminal", headers: H("X-View", "v")}, proxyperm.Forbidden, "viewer"},
		{"service-identity container", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claim("c9", "p1", evalNow))}, proxyperm.Allowed, "peers"},
		{"service-identity project", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claim("c5", "p7", evalNow.Add(-299*time.Second)))}, proxyperm.Allowed, "peers"},
		{"service-identity long-lived claim", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claimFor("c9", "p1", "c1", evalNow.Add(-50*time.Minute), time.Hour))}, proxyperm.Allowed, "peers"},
		{"service-identity expired", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claimFor("c9", "p1", "c1", evalNow.Add(-10*time.Minute), 5*time.Minute))}, proxyperm.Unauthorized, ""},
		{"service-identity wrong audience", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claimFor("c9", "p1", "c2", evalNow, 5*time.Minute))}, proxyperm.Unauthorized, ""},
		{"service-identity lifetime over an hour", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claimFor("c9", "p1", "c1", evalNow, 2*time.Hour))}, proxyperm.Unauthorized, ""},
		{"service-identity identity claim", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader,
			containerClaim(t, k.edPriv, proxyperm.ContainerClaim{Type: "identity", Container: "c9", Project: "p1", Audience: "c1", IssuedAt: evalNow.Unix(), Expires: evalNow.Add(time.Minute).Unix()}))}, proxyperm.Unauthorized, ""},
		{"service-identity wildcard", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claim("w42", "p3", evalNow))}, proxyperm.Allowed, "peers"},
		{"service-identity with kid", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claim("c9", "p1", evalNow)+".ed25519-0011")}, proxyperm.Allowed, "peers"},
		{"service-identity other container", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claim("c5", "p5", evalNow))}, proxyperm.Unauthorized, ""},
		{"service-identity stale claim", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claim("c9", "p1", evalNow.Add(-331*time.Second)))}, proxyperm.Unauthorized, ""},
		{"service-identity future claim", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, claim("c9", "p1", evalNow.Add(31*time.Second)))}, proxyperm.Unauthorized, ""},
		{"service-identity forged", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader,
			containerClaim(t, k.otherEd, proxyperm.ContainerClaim{Type: "container", Container: "c9", Project: "p1", Audience: "c1", IssuedAt: evalNow.Unix(), Expires: evalNow.Add(time.Minute).Unix()}))}, proxyperm.Unauthorized, ""},
		{"service-identity malformed", req{program: "services", port: 7701, headers: H(proxyperm.ClaimHeader, "nonsense")}, proxyperm.Unauthorized, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := p.Evaluate(c.r.facts(), verify)
			if d.Outcome != c.want || d.Group != c.group {
				t.Fatalf("outcome %d group %q (%s), want %d group %q", d.Outcome, d.Group, d.Reason, c.want, c.group)
			}
			if d.Outcome != proxyperm.Allowed {
				e := d.Error("cron")
				words := strings.FieldsFunc(e.Message+" "+e.Details, func(r rune) bool { return r == ' ' || r == ':' || r == ',' })
				for _, g := range p.Groups {
					if slices.Contains(words, g.Name) {
						t.Fatalf("refusal %q names group %s", e.Message, g.Name)
					}
				}
			}
			for _, secret := range []string{"hs-secret", "correct horse", "k-123", "c-456", "q-789"} {
				if strings.Contains(d.Reason+d.Subject, secret) {
					t.Fatalf("decision carries a secret: %+v", d)
				}
			}
		})
	}
}

func TestEvaluatePortForms(t *testing.T) {
	t.Parallel()
	forms := []struct {
		access string
		allow  []int
		deny   []int
	}{
		{`true`, []int{1, 22, 65535}, nil},
		{`"*"`, []int{1, 80, 65535}, nil},
		{`false`, nil, []int{1, 80, 65535}},
		{`8080`, []int{8080}, []int{8079, 8081, 80}},
		{`[80,443]`, []int{80, 443}, []int{81, 442, 8080}},
		{`"3000-3002"`, []int{3000, 3001, 3002}, []int{2999, 3003}},
		{`"22-22"`, []int{22}, []int{21, 23}},
	}
	for _, f := range forms {
		p := compileJSON(t, `{"project":"p","container":"c","groups":{"net":{"type":"ip","range":"0.0.0.0/0"}},"permissions":{"net":{"http":`+f.access+`}}}`)
		for _, port := range f.allow {
			if d := p.Evaluate(req{program: "http", port: port}.facts(), nil); !d.Allowed() {
				t.Errorf("%s: port %d refused", f.access, port)
			}
		}
		for _, port := range f.deny {
			if d := p.Evaluate(req{program: "http", port: port}.facts(), nil); d.Outcome != proxyperm.Forbidden {
				t.Errorf("%s: port %d: outcome %d, want 403", f.access, port, d.Outcome)
			}
		}
		// Another program is not covered by the rule.
		if d := p.Evaluate(req{program: "terminal", port: 7703}.facts(), nil); d.Outcome != proxyperm.Forbidden {
			t.Errorf("%s: terminal passed", f.access)
		}
	}
}

func TestEvaluateDefaultDisabledAndNoDocument(t *testing.T) {
	t.Parallel()
	allow := compileJSON(t, `{"project":"p","container":"c","default":"allow","groups":{"t":{"type":"token","header":"X-K","value":"v"}},"permissions":{"t":{"files":false}}}`)
	if d := allow.Evaluate(req{program: "files"}.facts(), nil); !d.Allowed() || d.Group != "" {
		t.Fatalf("default allow: %+v", d)
	}
	// A matched group whose rule says false still falls to the default.
	if d := allow.Evaluate(req{program: "files", headers: map[string]string{"X-K": "v"}}.facts(), nil); !d.Allowed() {
		t.Fatalf("default allow with a denying group: %+v", d)
	}
	off := compileJSON(t, `{"project":"p","container":"c","default":"allow","enable_proxy":false,"groups":{},"permissions":{}}`)
	if d := off.Evaluate(req{program: "files"}.facts(), nil); d.Outcome != proxyperm.Disabled || d.Error("files").Status() != 503 || d.Error("files").Code != "PROXY_DISABLED" {
		t.Fatalf("disabled: %+v", d)
	}
	if d := off.Evaluate(req{program: "files", src: "127.0.0.1"}.facts(), nil); !d.Allowed() {
		t.Fatalf("disabled proxy refused loopback: %+v", d)
	}
	var none *proxyperm.Policy
	if d := none.Evaluate(req{program: "files", src: "127.0.0.1"}.facts(), nil); !d.Allowed() {
		t.Fatal("no document: loopback refused")
	}
	if d := none.Evaluate(req{program: "files", src: "10.0.0.1"}.facts(), nil); d.Allowed() {
		t.Fatal("no document: outside client passed")
	}
	// service-identity without a verifier never matches.
	si := compileJSON(t, `{"project":"p","container":"c","groups":{"s":{"type":"service-identity","containers":["c*"]}},"permissions":{"s":{"files":true}}}`)
	if d := si.Evaluate(req{program: "files", headers: map[string]string{proxyperm.ClaimHeader: "a.b"}}.facts(), nil); d.Allowed() {
		t.Fatal("claim passed without a verifier")
	}
}

func TestProgramFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		svc  string
		port int
		want string
	}{
		{"terminal", 7703, "terminal"}, {"files", 7702, "files"}, {"exec", 7708, "exec"}, {"notifications", 7714, "notifications"},
		{"tunnel", 3000, "http"}, {"tunnel", 22, "ssh"}, {"http", 22, "ssh"}, {"ssh", 22, "ssh"}, {"services", 22, "ssh"}, {"vault", 7705, "services"}, {"journal", 7709, "services"}, {"curl", 7713, "services"},
		{"cron", 7701, "exec"}, {"daemon", 7707, "exec"}, {"run", 7712, "exec"}, {"process", 7715, "exec"},
	} {
		if got := proxyperm.ProgramFor(c.svc, c.port); got != c.want {
			t.Errorf("ProgramFor(%s, %d) = %s, want %s", c.svc, c.port, got, c.want)
		}
	}
}

// FuzzEvaluate: any request facts against a document of every group type
// decide without panicking; an allowed request names a group whose rule
// admits program and port (the document's default is deny), a refusal
// renders a container error naming no group, and a decision never
// carries a secret. Seeds run in the normal suite.
func FuzzEvaluate(f *testing.F) {
	k := newKeys(f)
	p := compileJSON(f, evalDoc(k))
	verify := verifierFor(k.edPub)
	hs := sign(f, jwt.SigningMethodHS256, []byte("hs-secret"), jwt.MapClaims{"role": "admin", "level": 3, "staff": true})
	good := containerClaim(f, k.edPriv, proxyperm.ContainerClaim{Type: "container", Container: "c9", Project: "p1", Audience: "c1",
		IssuedAt: evalNow.Unix(), Expires: evalNow.Add(time.Minute).Unix()})
	seeds := []struct {
		prog          string
		port          int
		ip            []byte
		auth, key, cl string
		cookie, param string
	}{
		{"terminal", 7703, []byte{10, 1, 2, 3}, "Bearer " + hs, "", "", "", ""},
		{"http", 8000, []byte{10, 1, 2, 3}, "", "", "", "", ""},
		{"services", 7701, []byte{1, 2, 3, 4}, "Basic YWxpY2U6Y29ycmVjdCBob3JzZQ==", "", "", "", ""},
		{"services", 7701, []byte{1, 2, 3, 4}, "", "", good, "", ""},
		{"notifications", 0, []byte{127, 0, 0, 1}, "", "k-123", "", "", ""},
		{"files", 1, []byte{0, 0, 0, 0}, "Basic ::::", "", "x.y.z", "c-456", "q-789"},
		{"nonsense", -1, []byte{255}, "Bearer ....", "\x00", "..", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.prog, s.port, s.ip, s.auth, s.key, s.cl, s.cookie, s.param)
	}
	f.Fuzz(func(t *testing.T, prog string, port int, ip []byte, auth, key, cl, cookie, param string) {
		src, _ := netip.AddrFromSlice(ip)
		facts := proxyperm.Facts{Program: prog, Port: port, Source: src, Now: evalNow, Audience: "c1",
			Header: func(n string) string {
				switch n {
				case "Authorization":
					return auth
				case "X-Key", "X-RS":
					return key
				case proxyperm.ClaimHeader:
					return cl
				}
				return ""
			},
			Cookie: func(n string) string {
				if n == "ck" || n == "es" || n == "session" {
					return cookie
				}
				return ""
			},
			Param: func(string) string { return param },
		}
		d := p.Evaluate(facts, verify)
		switch d.Outcome {
		case proxyperm.Allowed:
			a, ok := p.Rules[d.Group][prog]
			if !ok || !a.Allows(port) {
				t.Fatalf("allowed by %q, whose rules do not admit %s:%d", d.Group, prog, port)
			}
		case proxyperm.Unauthorized, proxyperm.Forbidden:
			e := d.Error("svc")
			if e == nil || (d.Outcome == proxyperm.Forbidden) != (e.Status() == 403) {
				t.Fatalf("refusal renders %+v", e)
			}
		default:
			t.Fatalf("outcome %d from an enabled document", d.Outcome)
		}
		for _, secret := range []string{"hs-secret", "correct horse", "k-123", "c-456", "q-789"} {
			if strings.Contains(d.Reason+d.Subject, secret) && !strings.Contains(prog, secret) {
				t.Fatalf("decision carries a secret: %+v", d)
			}
		}
	})
}

// TestToolList: a decision asked for the mcp tool allow-list answers the
// union of the mcp_tools of every group admitting the request; groups
// without a list add nothing, groups whose rules do not admit the
// program are not counted, and nil means no list. A group carrying a
// list admits no request but one to the mcp service.
func TestToolList(t *testing.T) {
	t.Parallel()
	p := compileJSON(t, `{"project":"p1","container":"c1","default":"deny","groups":{
		"admin":{"type":"token","header":"X-Admin","value":"a"},
		"files":{"type":"token","header":"X-Key","value":"f","mcp_tools":["files_*"]},
		"nomcp":{"type":"token","header":"X-Other","value":"o","mcp_tools":["vault_*"]},
		"office":{"type":"ip","range":"10.0.0.0/8","mcp_tools":["process_run","files_read","files_*"]}},
		"permissions":{"admin":{"services":true},"files":{"services":true,"files":true},"nomcp":{"files":true},"office":{"services":true}}}`)
	for _, c := range []struct {
		name    string
		r       req
		ask     bool
		outcome proxyperm.Outcome
		want    []string
	}{
		{"one listed group", req{program: "services", headers: map[string]string{"X-Key": "f"}}, true, proxyperm.Allowed, []string{"files_*"}},
		{"a listed group admits nothing but the mcp service", req{program: "services", headers: map[string]string{"X-Key": "f"}}, false,
			proxyperm.Forbidden, nil},
		{"nor any other program of its rules", req{program: "files", headers: map[string]string{"X-Key": "f"}}, false, proxyperm.Forbidden, nil},
		{"no list", req{program: "services", headers: map[string]string{"X-Admin": "a"}}, true, proxyperm.Allowed, nil},
		{"a listed group limits a group without one", req{program: "services", src: "10.1.2.3", headers: map[string]string{"X-Admin": "a"}}, true,
			proxyperm.Allowed, []string{"files_*", "files_read", "process_run"}},
		{"union of two lists", req{program: "services", src: "10.1.2.3", headers: map[string]string{"X-Key": "f"}}, true,
			proxyperm.Allowed, []string{"files_*", "files_read", "process_run"}},
		{"a group not admitting the program adds nothing", req{program: "services", headers: map[string]string{"X-Key": "f", "X-Other": "o"}}, true,
			proxyperm.Allowed, []string{"files_*"}},
		{"a wrong credential of a listed group", req{program: "services", headers: map[string]string{"X-Admin": "a", "X-Key": "nope"}}, true,
			proxyperm.Allowed, nil},
		{"refused", req{program: "services", headers: map[string]string{"X-Other": "o"}}, true, proxyperm.Forbidden, nil},
	} {
		f := c.r.facts()
		f.ToolList = c.ask
		d := p.Evaluate(f, nil)
		if d.Outcome != c.outcome || !slices.Equal(d.Tools, c.want) || (c.want == nil) != (d.Tools == nil) {
			t.Errorf("%s: outcome %v tools %#v, want %v %#v", c.name, d.Outcome, d.Tools, c.outcome, c.want)
		}
	}
}
