package proxyperm

import (
	"crypto/subtle"
	"slices"
	"time"
)

// match is one group's verdict on a request.
type match uint8

const (
	absent    match = iota // no credential for this group in the request
	mismatch               // a credential was presented and failed
	matched                // the credential is valid for the group
	mismatchQ              // ip: not in range (not a credential failure)
)

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
			v = ask(f.Header, g.Name2)
		case "cookie":
			v = ask(f.Cookie, g.Name2)
		default:
			v = ask(f.Param, g.Name2)
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
				tok = ask(f.Cookie, s.Name)
			} else {
				tok = ask(f.Header, s.Name)
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
