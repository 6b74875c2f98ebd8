package proxyperm

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"path"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
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
	jwts    map[string]*parsedJWT // by token string
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
	h := ask(st.f.Header, "Authorization")
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
		return st.claim, ask(st.f.Header, ClaimHeader) != ""
	}
	st.claimIn = true
	h := ask(st.f.Header, ClaimHeader)
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

// checkPassword is a password group's verdict on Basic credentials u, pw:
// user and password compared in constant time. The argon2id check runs
// only for the group's user name, so a request for another user costs no
// KDF run (the user name is not a secret the timing protects).
func (g *CompiledGroup) checkPassword(u, pw string) bool {
	userOK := subtle.ConstantTimeCompare([]byte(u), []byte(g.Username))
	if g.argon != nil {
		return userOK == 1 && g.argon.check(pw) == 1
	}
	sum := sha256.Sum256([]byte(g.Salt + pw))
	passOK := subtle.ConstantTimeCompare(sum[:], g.Hash)
	return userOK&passOK == 1
}

// verifiedClaim decodes the payload of v when it is a token
// (payload.signature.kid) the control plane's keys signed. With hexSig
// a signature that is not hex is refused before any key lookup.
func verifiedClaim[C any](st *evalState, v string, hexSig bool) (C, bool) {
	var c C
	if v == "" || len(v) > 4<<10 {
		return c, false
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 || hexSig && !signatureHex(parts[1]) {
		return c, false
	}
	raw, err := st.verify(parts[0], parts[1], parts[2])
	if err != nil || json.Unmarshal(raw, &c) != nil {
		return c, false
	}
	return c, true
}

// signatureHex reports whether s may be an ED25519 signature in hex.
func signatureHex(s string) bool {
	if len(s) != 2*64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
