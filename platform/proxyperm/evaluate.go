package proxyperm

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// CodeProxyDisabled is the refusal of a gateway whose document says
// enable_proxy false.
const CodeProxyDisabled = "PROXY_DISABLED"

func init() { fault.RegisterCode(CodeProxyDisabled, http.StatusServiceUnavailable) }

// ClaimHeader carries a service-identity container claim:
// `<payload_b64>.<signature_hex>` or `<payload_b64>.<signature_hex>.<kid>`,
// as minted by POST /api/v1/containers/{id}/claims.
const ClaimHeader = "X-Deckhand-Container-Claim"

// ClaimSkew is the clock skew allowed on a claim's iat and exp.
const ClaimSkew = 30 * time.Second

// MaxClaimLifetime bounds exp - iat: a claim that claims to last longer
// is refused whatever its signature.
const MaxClaimLifetime = time.Hour

// ClaimTypeContainer is the typ of a container claim (an identity claim,
// signed by the same keys, says "identity" and never passes here).
const ClaimTypeContainer = "container"

// ContainerClaim is the payload of a container claim: which container
// (and project) presents it, to which container (aud), from when until
// when (unix seconds).
type ContainerClaim struct {
	Type      string `json:"typ"`
	Container string `json:"container"`
	Project   string `json:"project"`
	Audience  string `json:"aud"`
	IssuedAt  int64  `json:"iat"`
	Expires   int64  `json:"exp"`
}

// Check reports why a claim's payload may not be used at the gateway of
// container audience at now ("" when it may).
func (c *ContainerClaim) Check(audience string, now time.Time) string {
	switch {
	case c.Type != ClaimTypeContainer:
		return "not a container claim"
	case c.Container == "":
		return "no container"
	case audience == "" || c.Audience != audience:
		return "issued for another audience"
	case c.IssuedAt == 0 || c.Expires == 0:
		return "no iat or exp"
	case time.Unix(c.IssuedAt, 0).After(now.Add(ClaimSkew)):
		return "issued in the future"
	case now.After(time.Unix(c.Expires, 0).Add(ClaimSkew)):
		return "expired"
	case c.Expires < c.IssuedAt || time.Duration(c.Expires-c.IssuedAt)*time.Second > MaxClaimLifetime:
		return "lifetime out of bounds"
	}
	return ""
}

// ClaimVerifier checks a claim's signature against the control plane's
// keys and returns the payload JSON; nil when no control plane is known
// (then no service-identity group ever matches).
type ClaimVerifier func(payloadB64, signatureHex, kid string) ([]byte, error)

// Facts are what the evaluator knows about one request: no HTTP types,
// only strings the gateway read. Header, Cookie and Param return "" when
// absent; nil functions mean "none".
type Facts struct {
	// Program and Port are what the request reaches (see ProgramFor).
	Program string
	Port    int
	// Source is the client address: the connection's peer, or the
	// trusted proxy's X-Forwarded-For hop under --trust-proxy-headers.
	Source netip.Addr
	// Loopback: the connection comes from loopback and no trusted proxy
	// named another client. Only it passes without a document, or when
	// the proxy is disabled (in-container tools).
	Loopback bool
	// Audience is the container this gateway serves: a container claim
	// must be issued for it.
	Audience string
	Header   func(name string) string
	Cookie   func(name string) string
	Param    func(name string) string
	// Now is the evaluation time (exp, nbf, claim iat).
	Now time.Time
	// ToolList asks an allowing decision for the caller's mcp tool
	// allow-list (Decision.Tools): set for requests to the mcp service.
	ToolList bool
	// ActingFor: the request is one the mcp service makes for its caller
	// (judged for its reach), not one the caller sent to the service.
	ActingFor bool
	// Service is the service the request reaches, as the gateway routed
	// it, and Via the one acting for the caller when ActingFor: an access
	// token limited to some services is judged by them.
	Service, Via string
}

// admitsDirectly reports whether group g may admit the request by its
// rules: a group carrying mcp_tools is a boundary that admits its holder
// to the mcp service only (ToolList); its other programs act only through
// that service's tools (ActingFor), never for a request sent straight to
// another service.
func (f *Facts) admitsDirectly(g *CompiledGroup) bool {
	return g.Tools == nil || f.ToolList || f.ActingFor
}

func (f *Facts) header(n string) string {
	if f.Header == nil {
		return ""
	}
	return f.Header(n)
}

func (f *Facts) cookie(n string) string {
	if f.Cookie == nil {
		return ""
	}
	return f.Cookie(n)
}

func (f *Facts) param(n string) string {
	if f.Param == nil {
		return ""
	}
	return f.Param(n)
}

// Outcome is what the gateway does with a request.
type Outcome uint8

// Outcomes.
const (
	Allowed      Outcome = iota
	Unauthorized         // 401: no credential matched (none, malformed or wrong)
	Forbidden            // 403: a group matched but none allows program and port
	Disabled             // 503 PROXY_DISABLED
)

// Decision is the evaluator's answer. Group, Type and Subject name the
// identity (empty when the default policy decided); Reason is for the
// journal and never holds a credential.
type Decision struct {
	Outcome Outcome
	Group   string
	Type    string
	Subject string
	Reason  string
	// Matched lists every group whose credential matched (only filled when
	// the request was refused or decided by the default).
	Matched []string
	// Tools, when Facts.ToolList asked for it and a group allowed the
	// request, is the union of the mcp_tools of every group that admits
	// it (credential matched, rules allow program and port), sorted; nil
	// when none of them carries a list: no limit.
	Tools []string
}

// Allowed reports whether the request passes.
func (d Decision) Allowed() bool { return d.Outcome == Allowed }

// Error is the container error a refusal renders as. Messages never name
// a group: a caller learns nothing about which groups exist.
func (d Decision) Error(service string) *fault.Error {
	switch d.Outcome {
	case Unauthorized:
		return &fault.Error{Code: fault.CodeUnauthorized, Details: service,
			Message: "authentication required: no valid credential for this container was presented"}
	case Forbidden:
		return &fault.Error{Code: fault.CodeForbidden, Details: service,
			Message: "access denied: your credential does not allow this service"}
	case Disabled:
		return &fault.Error{Code: CodeProxyDisabled, Details: service,
			Message: "the proxy of this container is disabled"}
	}
	return nil
}

// Program names (see contract.ServiceProgram).
const (
	ProgramHTTP          = contract.ProgramHTTP
	ProgramTerminal      = contract.ProgramTerminal
	ProgramSSH           = contract.ProgramSSH
	ProgramFiles         = contract.ProgramFiles
	ProgramExec          = contract.ProgramExec
	ProgramServices      = contract.ProgramServices
	ProgramNotifications = contract.ProgramNotifications
	ProgramDesktop       = contract.ProgramDesktop
)

// ProgramFor maps a service reached through the gateway, and its port, to
// the program name a rule names (docs/spec/operations.md, contract.ServiceProgram):
// terminal for the terminal; exec for every other service that runs a
// command (process, daemon, exec, cron, run); files and notifications for
// those services; for a tunnelled port (service "tunnel" or "http", port
// the tunnelled one) ssh for 22 and http for any other; ssh for service
// "ssh" or port 22; services for the rest, which never reaches a command.
func ProgramFor(service string, port int) string {
	switch service {
	case "tunnel", ProgramHTTP:
		if port == 22 {
			return ProgramSSH
		}
		return ProgramHTTP
	case ProgramSSH:
		return ProgramSSH
	}
	if p := contract.ServiceProgram(service); p != ProgramServices || port != 22 {
		return p
	}
	return ProgramSSH
}

// match is one group's verdict on a request.
type match uint8

const (
	absent    match = iota // no credential for this group in the request
	mismatch               // a credential was presented and failed
	matched                // the credential is valid for the group
	mismatchQ              // ip: not in range (not a credential failure)
)

// evalState memoizes what several groups of one request share.
type evalState struct {
	f       *Facts
	verify  ClaimVerifier
	basicOK bool
	basicU  string
	basicP  string
	basicIn bool
	claim   *ContainerClaim
	claimIn bool
	claimOK bool
	jwts    map[string]*parsedJWT // by token string
}

// Evaluate decides one request. A nil policy is "no document": only a
// loopback source passes (docs/spec/operations.md). verify may be nil.
func (p *Policy) Evaluate(f Facts, verify ClaimVerifier) Decision {
	if p == nil || p.Enabled {
		// A preview token and an access token need no document: the
		// control plane's signature is the grant.
		if f.Now.IsZero() {
			f.Now = time.Now()
		}
		st := &evalState{f: &f, verify: verify}
		if d, ok := st.preview(); ok {
			return d
		}
		if d, ok := st.access(); ok {
			return d
		}
	}
	if p == nil {
		if f.Loopback {
			return Decision{Outcome: Allowed, Type: "loopback", Subject: f.Source.String(), Reason: "no document: loopback client"}
		}
		return Decision{Outcome: Forbidden, Reason: "no document applies: only loopback clients pass"}
	}
	if !p.Enabled {
		if f.Loopback {
			return Decision{Outcome: Allowed, Type: "loopback", Subject: f.Source.String(), Reason: "proxy disabled: loopback client"}
		}
		return Decision{Outcome: Disabled, Reason: "enable_proxy is false"}
	}
	if f.Now.IsZero() {
		f.Now = time.Now()
	}
	st := &evalState{f: &f, verify: verify}
	// Groups whose rules admit program and port first: the first that
	// matches decides, and the rest are never checked (a 50-group document
	// costs one signature check, not fifty).
	tried := make([]bool, len(p.Groups))
	for i := range p.Groups {
		g := &p.Groups[i]
		a, ok := p.Rules[g.Name][f.Program]
		if !ok || !a.Allows(f.Port) || !f.admitsDirectly(g) {
			continue
		}
		tried[i] = true
		if m, subj := st.check(g); m == matched {
			d := Decision{Outcome: Allowed, Group: g.Name, Type: g.Type, Subject: subj,
				Reason: "group " + g.Name + " allows " + f.Program}
			if f.ToolList {
				d.Tools = p.toolList(st, i)
			}
			return d
		}
	}
	if p.DefaultAllow {
		return Decision{Outcome: Allowed, Reason: "default allow"}
	}
	// Refused: find out whether any group matched (403) or none did (401).
	d := Decision{Outcome: Unauthorized, Reason: "no group matched; default deny"}
	for i := range p.Groups {
		g := &p.Groups[i]
		if tried[i] {
			// Tried and not matched (memoized checks are cheap to repeat,
			// but a tried group cannot have matched: it would have allowed).
			continue
		}
		if m, _ := st.check(g); m == matched {
			d.Matched = append(d.Matched, g.Name)
		}
	}
	if len(d.Matched) > 0 {
		d.Outcome = Forbidden
		d.Group = d.Matched[0]
		d.Reason = "matched groups do not allow " + f.Program + "; default deny"
		for _, name := range d.Matched {
			if g := p.group(name); g != nil && !f.admitsDirectly(g) {
				d.Reason = "matched groups do not allow " + f.Program + " (group " + name +
					" carries mcp_tools: it admits the mcp service only); default deny"
				break
			}
		}
	}
	return d
}

func (p *Policy) group(name string) *CompiledGroup {
	for i := range p.Groups {
		if p.Groups[i].Name == name {
			return &p.Groups[i]
		}
	}
	return nil
}

// toolList is the union of the mcp_tools of the groups admitting the
// request, the first of which is Groups[first]: the groups before it that
// admit program and port were tried and did not match, so only the later
// ones with a list are checked (the credential checks are memoized per
// request). A group with no list adds nothing: a list limits its callers
// whichever other groups they also match.
func (p *Policy) toolList(st *evalState, first int) []string {
	var out []string
	for j := first; j < len(p.Groups); j++ {
		g := &p.Groups[j]
		if g.Tools == nil {
			continue
		}
		if j != first {
			a, ok := p.Rules[g.Name][st.f.Program]
			if !ok || !a.Allows(st.f.Port) {
				continue
			}
			if m, _ := st.check(g); m != matched {
				continue
			}
		}
		out = append(out, g.Tools...)
	}
	if out == nil {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// check tests one group; subject names who matched (never a secret).
func (st *evalState) check(g *CompiledGroup) (match, string) {
	f := st.f
	switch g.Type {
	case TypeIP:
		if f.Source.IsValid() && g.Prefix.Contains(f.Source.Unmap()) {
			return matched, f.Source.Unmap().String()
		}
		return mismatchQ, ""
	case TypeToken:
		var v string
		switch g.Location {
		case "header":
			v = f.header(g.Name2)
		case "cookie":
			v = f.cookie(g.Name2)
		default:
			v = f.param(g.Name2)
		}
		if v == "" {
			return absent, ""
		}
		if subtle.ConstantTimeCompare([]byte(v), []byte(g.Value)) == 1 {
			return matched, g.Location + ":" + g.Name2
		}
		return mismatch, ""
	case TypePassword:
		u, pw, ok := st.basic()
		if !ok {
			return absent, ""
		}
		if g.checkPassword(u, pw) {
			return matched, g.Username
		}
		return mismatch, ""
	case TypeJWT:
		seen := false
		for _, s := range g.Sources {
			var tok string
			if s.Cookie {
				tok = f.cookie(s.Name)
			} else {
				tok = f.header(s.Name)
				if t, ok := cutBearer(tok); ok {
					tok = t
				}
			}
			if tok == "" {
				continue
			}
			seen = true
			if claims := st.jwt(g, tok); claims != nil && claimsMatch(g.Claims, claims) {
				sub, _ := claims["sub"].(string)
				return matched, sub
			}
		}
		if seen {
			return mismatch, ""
		}
		return absent, ""
	case TypeServiceIdentity:
		c, in := st.containerClaim()
		if !in {
			return absent, ""
		}
		if c == nil {
			return mismatch, ""
		}
		for _, id := range g.Containers {
			if idMatches(id, c.Container) {
				return matched, "container:" + c.Container
			}
		}
		for _, id := range g.Projects {
			if idMatches(id, c.Project) {
				return matched, "project:" + c.Project + "/container:" + c.Container
			}
		}
		return mismatch, ""
	}
	return absent, ""
}

// idMatches compares an allowed id with a claimed one; '*' in an allowed
// id is a wildcard for any run of characters ("c*" admits c1, c22).
func idMatches(allowed, got string) bool {
	if got == "" || strings.ContainsRune(got, '/') {
		return false
	}
	if strings.ContainsRune(allowed, '*') {
		ok, err := path.Match(allowed, got)
		return err == nil && ok
	}
	return allowed == got
}

func cutBearer(v string) (string, bool) {
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:]), true
	}
	return v, false
}

// basic reads HTTP Basic credentials once per request.
func (st *evalState) basic() (string, string, bool) {
	if st.basicIn {
		return st.basicU, st.basicP, st.basicOK
	}
	st.basicIn = true
	h := st.f.header("Authorization")
	if len(h) < 6 || !strings.EqualFold(h[:6], "basic ") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[6:]))
	if err != nil {
		// Presented but malformed: counts as a failed credential.
		st.basicOK = true
		st.basicU, st.basicP = "\x00", "\x00"
		return st.basicU, st.basicP, true
	}
	u, pw, ok := strings.Cut(string(raw), ":")
	if !ok {
		u, pw = "\x00", "\x00"
	}
	st.basicU, st.basicP, st.basicOK = u, pw, true
	return u, pw, true
}

// parsedJWT is a token decoded once per request; each group then checks
// only the signature with its own key.
type parsedJWT struct {
	ok      bool // decoded into header, claims and signature
	alg     string
	signing string
	sig     []byte
	claims  jwt.MapClaims
	timeOK  bool // exp and nbf hold at Now
}

var unverified = jwt.NewParser()

// jwt verifies tok for g. The algorithm is pinned to the group's: a token
// whose header names another one (an HS256 token presented to an RS256
// group, whose PEM would otherwise serve as an HMAC secret; alg none)
// never verifies. exp and nbf are honoured.
func (st *evalState) jwt(g *CompiledGroup, tok string) jwt.MapClaims {
	if len(tok) > 16<<10 {
		return nil
	}
	pj, seen := st.jwts[tok]
	if !seen {
		pj = st.parseJWT(tok)
		if st.jwts == nil {
			st.jwts = map[string]*parsedJWT{}
		}
		st.jwts[tok] = pj
	}
	if !pj.ok || !pj.timeOK || pj.alg != g.Algorithm {
		return nil
	}
	m := jwt.GetSigningMethod(g.Algorithm)
	if m == nil {
		return nil
	}
	var key any = g.PublicKey
	if g.Algorithm == "HS256" {
		key = g.HMACKey
	}
	if m.Verify(pj.signing, pj.sig, key) != nil {
		return nil
	}
	return pj.claims
}

func (st *evalState) parseJWT(tok string) *parsedJWT {
	claims := jwt.MapClaims{}
	t, parts, err := unverified.ParseUnverified(tok, claims)
	if err != nil || len(parts) != 3 || t.Method == nil {
		return &parsedJWT{}
	}
	sig, err := unverified.DecodeSegment(parts[2])
	if err != nil {
		return &parsedJWT{}
	}
	now := st.f.Now
	timeOK := jwt.NewValidator(jwt.WithTimeFunc(func() time.Time { return now })).Validate(claims) == nil
	return &parsedJWT{ok: true, alg: t.Method.Alg(), signing: parts[0] + "." + parts[1], sig: sig, claims: claims, timeOK: timeOK}
}

// claimsMatch: every configured claim is present with an equal value
// (numbers compare as numbers).
func claimsMatch(want map[string]any, got jwt.MapClaims) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		switch wv := w.(type) {
		case string:
			if gv, ok := g.(string); !ok || gv != wv {
				return false
			}
		case bool:
			if gv, ok := g.(bool); !ok || gv != wv {
				return false
			}
		case float64:
			if gv, ok := g.(float64); !ok || gv != wv {
				return false
			}
		case json.Number:
			wf, err := wv.Float64()
			gv, ok := g.(float64)
			if err != nil || !ok || gv != wf {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// containerClaim reads and verifies the request's container claim once.
// in reports whether one was presented; c is nil when it failed.
func (st *evalState) containerClaim() (c *ContainerClaim, in bool) {
	if st.claimIn {
		return st.claim, st.f.header(ClaimHeader) != ""
	}
	st.claimIn = true
	h := st.f.header(ClaimHeader)
	if h == "" {
		return nil, false
	}
	if st.verify == nil || len(h) > 8<<10 {
		return nil, true
	}
	parts := strings.Split(h, ".")
	if len(parts) != 2 && len(parts) != 3 {
		return nil, true
	}
	kid := ""
	if len(parts) == 3 {
		kid = parts[2]
	}
	raw, err := st.verify(parts[0], parts[1], kid)
	if err != nil {
		return nil, true
	}
	var cc ContainerClaim
	if json.Unmarshal(raw, &cc) != nil || cc.Check(st.f.Audience, st.f.Now) != "" {
		return nil, true
	}
	st.claim = &cc
	return &cc, true
}
