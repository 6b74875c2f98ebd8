package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// X-Service-Signature covers "<t>.<body>": it proves the control plane
// wrote those bytes within the replay window, not which request they
// answer or with which status. A 304 has no body, so its signature is
// valid on any empty answer (a 404 passed on in its place); a signature
// taken from another answer can be replayed for up to 300 seconds.
//
// A client that must not be answered that way asks for a binding: it
// sends NonceHeader, fresh per request, and the answer carries
// BindingHeader, a second signature by the same key over the request and
// the whole answer (BindingData): status, method, path, ETag header,
// the client's nonce and the body's SHA-256. Without NonceHeader the
// answer is exactly as the interface describes, so clients that do not
// ask are unaffected.

// NonceHeader is the request header asking for a binding; its value
// comes back inside the signed data.
const NonceHeader = "X-Service-Nonce"

// BindingHeader carries the binding signature:
//
//	X-Service-Binding: t=<unix_ts>,kid=<key_id>,status=<http status>,sig=<128 hex>
const BindingHeader = "X-Service-Binding"

// bindingVersion starts the signed data so it never equals the data of
// another signature the keys make.
const bindingVersion = "deckhand-binding-v1"

// Errors of binding verification; callers match them with errors.Is.
var (
	ErrBindingMissing   = errors.New("signature: no " + BindingHeader + " header on an answer that was asked for one")
	ErrBindingMalformed = errors.New("signature: malformed " + BindingHeader + " header")
	ErrStatusMismatch   = errors.New("signature: the answer's status is not the one signed")
)

// ValidNonce reports whether n may be a nonce: 16 to 128 characters of
// the base64url alphabet, so it never needs quoting or escaping.
func ValidNonce(n string) bool {
	if len(n) < 16 || len(n) > 128 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Binding is what a binding signature covers: the request (method, path
// as sent without the query, nonce) and the answer (status, ETag header
// value as sent, body bytes).
type Binding struct {
	Status       int
	Method, Path string
	ETag, Nonce  string
	Body         []byte
}

// BindingData is the signed data of a binding at t, one field a line:
//
//	deckhand-binding-v1 \n <t> \n <status> \n <method> \n <path> \n <etag> \n <nonce> \n <hex sha256(body)>
//
// None of the fields can hold a newline (HTTP forbids it in a method,
// path or header value, and a nonce is base64url).
func BindingData(t int64, b Binding) []byte {
	sum := sha256.Sum256(b.Body)
	out := make([]byte, 0, 64+len(b.Method)+len(b.Path)+len(b.ETag)+len(b.Nonce)+2*len(sum))
	out = append(out, bindingVersion...)
	out = append(out, '\n')
	out = strconv.AppendInt(out, t, 10)
	out = append(out, '\n')
	out = strconv.AppendInt(out, int64(b.Status), 10)
	for _, f := range []string{b.Method, b.Path, b.ETag, b.Nonce} {
		out = append(out, '\n')
		out = append(out, f...)
	}
	out = append(out, '\n')
	return hex.AppendEncode(out, sum[:])
}

// BindingSignature is a parsed X-Service-Binding value.
type BindingSignature struct {
	T      int64
	KID    string
	Status int
	Sig    []byte
}

// FormatBinding renders the header value.
func FormatBinding(t int64, kid string, status int, sig []byte) string {
	return "t=" + strconv.FormatInt(t, 10) + ",kid=" + kid + ",status=" + strconv.Itoa(status) + ",sig=" + hex.EncodeToString(sig)
}

// ParseBinding parses a header value.
func ParseBinding(v string) (BindingSignature, error) {
	var b BindingSignature
	if v == "" {
		return b, ErrBindingMissing
	}
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrBindingMalformed, why) }
	parts := strings.Split(v, ",")
	if len(parts) != 4 {
		return b, bad("want t=,kid=,status=,sig=")
	}
	var ok bool
	var ts, status, sigHex string
	if ts, ok = strings.CutPrefix(parts[0], "t="); !ok {
		return b, bad("must start with t=")
	}
	if b.KID, ok = strings.CutPrefix(parts[1], "kid="); !ok || b.KID == "" || strings.ContainsAny(b.KID, " \t") {
		return b, bad("kid missing or holds separators")
	}
	if status, ok = strings.CutPrefix(parts[2], "status="); !ok {
		return b, bad("status missing after kid")
	}
	if sigHex, ok = strings.CutPrefix(parts[3], "sig="); !ok {
		return b, bad("sig missing after status")
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || t <= 0 || strings.HasPrefix(ts, "+") {
		return b, bad("t is not a positive unix timestamp")
	}
	code, err := strconv.Atoi(status)
	if err != nil || len(status) != 3 || code < 100 || code > 599 {
		return b, bad("status is not a 3-digit HTTP status")
	}
	if len(sigHex) != 2*ed25519.SignatureSize {
		return b, bad("sig must be 128 hex characters")
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		return b, bad("sig is not hex")
	}
	b.T, b.Status, b.Sig = t, code, sig
	return b, nil
}

// CheckEnvelopeStatus refuses a body whose envelope statusCode is not
// status: a control-plane body says which status it was written for, so
// a signed 200 passed on as a 404 (or the reverse) is caught even by a
// client that checks X-Service-Signature alone. A body that is not a
// JSON object with a statusCode passes: there is nothing to compare.
func CheckEnvelopeStatus(status int, body []byte) error {
	if len(body) == 0 || body[0] != '{' {
		return nil
	}
	var env struct {
		StatusCode *int `json:"statusCode"`
	}
	if json.Unmarshal(body, &env) != nil || env.StatusCode == nil {
		return nil
	}
	if *env.StatusCode != status {
		return fmt.Errorf("%w: the signed body says %d, the answer came as %d", ErrStatusMismatch, *env.StatusCode, status)
	}
	return nil
}
