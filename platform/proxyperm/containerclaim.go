package proxyperm

import "time"

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
	}
	return checkLifetime(c.IssuedAt, c.Expires, ClaimSkew, MaxClaimLifetime, now)
}

// checkLifetime reports why a token issued at iat and expiring at exp
// (unix seconds) may not be used at now ("" when it may): expirySkew is
// the grace it has after exp.
func checkLifetime(iat, exp int64, expirySkew, longest time.Duration, now time.Time) string {
	switch {
	case iat == 0 || exp == 0:
		return "no iat or exp"
	case time.Unix(iat, 0).After(now.Add(ClaimSkew)):
		return "issued in the future"
	case now.After(time.Unix(exp, 0).Add(expirySkew)):
		return "expired"
	case exp < iat || time.Duration(exp-iat)*time.Second > longest:
		return "lifetime out of bounds"
	}
	return ""
}

// ClaimVerifier checks a claim's signature against the control plane's
// keys and returns the payload JSON; nil when no control plane is known
// (then no service-identity group ever matches).
type ClaimVerifier func(payloadB64, signatureHex, kid string) ([]byte, error)
