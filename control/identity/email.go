package identity

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// emailRule is how the OpenAPI document states the address rule (signup,
// login, forgot-password and admin create share it).
const emailRule = "`email` is kept in one canonical form, so two spellings are one account: Unicode NFC, lower case, the domain " +
	"in its IDNA ASCII (punycode) form (`user@bücher.de` is `user@xn--bcher-kva.de`). 400 naming `email` for invalid UTF-8 or U+FFFD, " +
	"invisible, control or format characters (zero-width, BOM, soft hyphen), bidirectional controls, and a local part or domain label that mixes scripts " +
	"(UTS 39 highly restrictive: only Latin with Han and kana, Bopomofo or Hangul may mix)."

// normalizeEmail validates an address and returns its one canonical form,
// so that two spellings of an address are one account and addresses that
// only look alike are refused:
//
//   - refused: invalid UTF-8 and U+FFFD (what a decoder makes of it),
//     control and format characters (zero-width space/joiners, BOM, soft
//     hyphen, ...), other default-ignorable code points, bidirectional
//     controls, and whitespace inside the address;
//   - the whole address is NFC (composed and decomposed forms are one) and
//     lower-cased (the local part too, as deckhand always did: no two
//     accounts differ only by case);
//   - the domain goes through IDNA (UTS 46 mapping, then the IDNA2008
//     registration rules on the result) and is kept in its ASCII form
//     (punycode), so a Unicode domain and its xn-- spelling are one and
//     mail headers carry an unambiguous domain;
//   - a domain label (or the local part) whose letters mix scripts is
//     refused, except the combinations UTS 39 calls highly restrictive
//     (Latin with Han and Japanese kana, with Han and Bopomofo, with Han
//     and Hangul), so "pаypal.com" with a Cyrillic "а" is not a second
//     paypal.com.
func normalizeEmail(field, raw string) (string, error) {
	if !utf8.ValidString(raw) || strings.ContainsRune(raw, utf8.RuneError) {
		return "", fault.Invalid(field, "must be valid UTF-8 (it holds bytes that are not, or U+FFFD)")
	}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fault.Invalid(field, "is required")
	}
	for _, r := range raw {
		if isBidiControl(r) {
			return "", fault.Invalid(field, "must not contain bidirectional control characters (U+%04X)", r)
		}
		if isInvisible(r) {
			return "", fault.Invalid(field, "must not contain invisible, control or format characters (U+%04X)", r)
		}
	}
	if len(raw) > 254 {
		return "", fault.Invalid(field, "must be at most 254 characters")
	}
	addr := strings.ToLower(norm.NFC.String(raw))
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return "", fault.Invalid(field, "must be a valid email address")
	}
	local, domain := addr[:at], addr[at+1:]
	// The local part follows the same script rule: "аdmin" with a Cyrillic
	// "а" would otherwise pass for "admin" wherever addresses are shown.
	if scripts := mixedScripts(local); scripts != "" {
		return "", fault.Invalid(field, "the local part %q mixes scripts (%s)", local, scripts)
	}
	ascii, err := idna.Lookup.ToASCII(domain)
	if err != nil {
		return "", fault.Invalid(field, "must be a valid email address (the domain is not a valid internationalized domain name)")
	}
	ascii = strings.ToLower(ascii)
	uni, err := idna.Registration.ToUnicode(ascii)
	if err != nil {
		return "", fault.Invalid(field, "must be a valid email address (the domain is not a valid internationalized domain name)")
	}
	for _, label := range strings.Split(uni, ".") {
		if scripts := mixedScripts(label); scripts != "" {
			return "", fault.Invalid(field, "the domain label %q mixes scripts (%s)", label, scripts)
		}
	}
	addr = local + "@" + ascii
	if len(addr) > 254 {
		return "", fault.Invalid(field, "must be at most 254 characters")
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Address != addr || a.Name != "" || !strings.Contains(ascii, ".") && ascii != "localhost" {
		return "", fault.Invalid(field, "must be a valid email address")
	}
	return addr, nil
}

// isBidiControl: the explicit directional formatting characters (UAX 9)
// and the marks, which reorder how an address is displayed.
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F:
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// isInvisible: code points that render as nothing or that no address has:
// controls (Cc), format characters (Cf: zero-width space and joiners, BOM,
// soft hyphen, ...), private use, surrogates, unassigned, whitespace, and
// the default-ignorable letters and marks outside Cf (Hangul fillers,
// combining grapheme joiner, variation selectors).
func isInvisible(r rune) bool {
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Variation_Selector) {
		return true
	}
	switch r {
	case 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0:
		return true
	}
	return !unicode.Is(unicode.L, r) && !unicode.Is(unicode.M, r) && !unicode.Is(unicode.N, r) &&
		!unicode.Is(unicode.P, r) && !unicode.Is(unicode.S, r) // unassigned (Cn)
}

// Script sets a single label may combine (UTS 39 "highly restrictive").
var allowedMixes = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Bopomofo"},
	{"Latin", "Han", "Hangul"},
}

// mixedScripts names the scripts of label's letters when they are more
// than one and not an allowed combination; "" when the label is fine.
// Common and Inherited (digits, hyphen, combining marks) belong to any.
func mixedScripts(label string) string {
	seen := map[string]bool{}
	var order []string
	for _, r := range label {
		name := scriptOf(r)
		if name == "" || name == "Common" || name == "Inherited" || seen[name] {
			continue
		}
		seen[name] = true
		order = append(order, name)
	}
	if len(order) <= 1 {
		return ""
	}
	for _, allowed := range allowedMixes {
		ok := true
		for _, s := range order {
			found := false
			for _, a := range allowed {
				found = found || a == s
			}
			ok = ok && found
		}
		if ok {
			return ""
		}
	}
	return strings.Join(order, " and ")
}

func scriptOf(r rune) string {
	if r < 0x80 {
		if unicode.IsLetter(r) {
			return "Latin"
		}
		return "Common"
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

// metaEmailsCanonical marks a store whose email index is in the canonical
// form of normalizeEmail.
const metaEmailsCanonical = "emails_canonical_v1"

// canonicalizeEmails re-keys, once per store, the accounts whose address
// was stored before the canonical form (only lower-cased): a Unicode
// domain becomes its ASCII form, decomposed text NFC. When two accounts
// map to one address (the spoofing this form prevents), the one already
// canonical, else the first in key order, takes the address; the other
// keeps its old spelling, can still log in by username, and is logged for
// an operator. Addresses the rules now refuse are left and logged alike.
func (s *Service) canonicalizeEmails() error {
	return s.update(func(tx *store.Tx) error {
		if tx.GetRaw(bucketMeta, metaEmailsCanonical) != nil {
			return nil
		}
		type move struct{ old, canon, id string }
		var moves []move
		err := tx.ForEach(bucketEmails, func(k string, raw []byte) error {
			canon, err := normalizeEmail("email", k)
			switch {
			case err != nil:
				s.log.Warn("identity: a stored address breaks the address rules; its account logs in by username only", "user_id", string(raw), "rule", err.Error())
			case canon != k:
				moves = append(moves, move{k, canon, string(raw)})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, m := range moves {
			if other := tx.GetRaw(bucketEmails, m.canon); other != nil {
				s.log.Warn("identity: two accounts share one canonical address; this one keeps its old spelling and logs in by username only",
					"user_id", m.id, "other_user_id", string(other))
				continue
			}
			u, err := getUser(tx, m.id)
			if err != nil || u == nil {
				return err
			}
			u.Email = m.canon
			if err := putUser(tx, u); err != nil {
				return err
			}
			if err := tx.Delete(bucketEmails, m.old); err != nil {
				return err
			}
			if err := tx.PutRaw(bucketEmails, m.canon, []byte(m.id)); err != nil {
				return err
			}
		}
		return tx.PutRaw(bucketMeta, metaEmailsCanonical, []byte("1"))
	})
}
