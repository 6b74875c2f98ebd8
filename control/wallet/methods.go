package wallet

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// PaymentMethod is a saved way to pay. Details never hold a whole card
// number or a card's secrets: see sanitizeDetails.
type PaymentMethod struct {
	ID        string         `json:"id"`
	UserID    string         `json:"user_id"`
	Type      string         `json:"type"`
	Name      string         `json:"name"`
	Status    string         `json:"status" doc:"active or inactive"`
	Details   map[string]any `json:"details"`
	IsDefault bool           `json:"is_default" doc:"at most one of a user's methods is the default"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// MethodInput is the body of POST /api/v1/wallet/payment-methods.
type MethodInput struct {
	Type      string         `json:"type" required:"true" doc:"1-40 lower-case letters, digits or _ (credit_card, paypal, crypto_wallet ...)"`
	Name      string         `json:"name" required:"true" doc:"1-100 characters"`
	Details   map[string]any `json:"details,omitempty" doc:"free-form object (at most 4 KiB); card numbers are reduced to brand and last4, CVC/PIN/passwords dropped"`
	IsDefault bool           `json:"is_default,omitempty" default:"false" doc:"make it the caller's default payment method (the only one)"`
}

var methodType = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)

// Validate checks type, name and details.
func (in *MethodInput) Validate() error {
	if !methodType.MatchString(in.Type) {
		return fault.Invalid("type", "must be 1 to 40 lower-case letters, digits or _ (such as credit_card)")
	}
	in.Name = strings.TrimSpace(in.Name)
	if n := utf8.RuneCountInString(in.Name); n == 0 || n > 100 {
		return fault.Invalid("name", "must be 1 to 100 characters")
	}
	return checkDetails(in.Details)
}

func checkDetails(d map[string]any) error {
	if d == nil {
		return nil
	}
	raw, _ := json.Marshal(d)
	if len(raw) > 4096 {
		return fault.Invalid("details", "must be at most 4096 bytes of JSON")
	}
	return nil
}

// MethodUpdate is the body of PUT /api/v1/wallet/payment-methods/{id}.
type MethodUpdate struct {
	Details   map[string]any `json:"details,omitempty" doc:"replaces the details (sanitized like at creation)"`
	Status    *string        `json:"status,omitempty" enum:"active,inactive"`
	IsDefault *bool          `json:"is_default,omitempty" doc:"true makes it the default (it must be active); false on the default is refused: make another one default instead"`
}

// Validate checks status and details.
func (in *MethodUpdate) Validate() error {
	if in.Status != nil && *in.Status != "active" && *in.Status != "inactive" {
		return fault.Invalid("status", "must be active or inactive")
	}
	return checkDetails(in.Details)
}

// MethodRef names one of the caller's payment methods.
type MethodRef struct {
	ID string `path:"id" doc:"a payment method id (pm_...)"`
}

// MethodChange is PUT /api/v1/wallet/payment-methods/{id}.
type MethodChange struct {
	MethodRef
	Body MethodUpdate
}

func (s *Service) methodRoutes() []platform.Route {
	tag := []string{"wallet"}
	const base = "/api/v1/wallet/payment-methods"
	return []platform.Route{
		{Method: http.MethodGet, Path: base, OperationID: "listPaymentMethods", Policy: platform.SignedIn, Tags: tag,
			Summary: "The caller's payment methods, oldest first", Message: "Payment methods", Op: platform.ReadOp(s.ListMethods)},
		{Method: http.MethodGet, Path: base + "/{id}", OperationID: "getPaymentMethod", Policy: platform.SignedIn, Tags: tag,
			Summary: "One payment method", Message: "Payment method", Op: platform.Op(s.GetMethod)},
		{Method: http.MethodPost, Path: base, OperationID: "createPaymentMethod", Policy: platform.SignedIn, Tags: tag, Status: http.StatusCreated,
			Summary: "Save a payment method",
			Description: "`is_default` defaults to false: the method becomes the default only when asked, and then the one default. " +
				"`details` is stored sanitized: a card number (any key such as number/card_number/pan, or any 12-19 digit value passing the Luhn check) " +
				"is replaced by `brand` and `last4`; cvc/cvv/pin/password/secret keys are dropped. Writes `wallet.payment_method.created`.",
			Message: "Payment method created", Op: platform.Op(s.CreateMethod)},
		{Method: http.MethodPut, Path: base + "/{id}", OperationID: "updatePaymentMethod", Policy: platform.SignedIn, Tags: tag,
			Summary: "Change details, status or default",
			Description: "`status` active/inactive; the default method cannot be made inactive while the user has others (make another default first), " +
				"an inactive method cannot be made default. Writes `wallet.payment_method.updated`.",
			Message: "Payment method updated", Op: platform.Op(s.UpdateMethod)},
		{Method: http.MethodPut, Path: base + "/{id}/default", OperationID: "setDefaultPaymentMethod", Policy: platform.SignedIn, Tags: tag,
			Summary: "Make the method the default (PUT with is_default true)", Message: "Default payment method set",
			Op: platform.Op(s.SetDefaultMethod)},
	}
}

func methodEvent(kind, userID, ip, id string, payload map[string]any) events.Event {
	return events.Event{EventType: kind, ResourceType: "payment_method", ResourceID: id, ActorID: userID, IP: ip, Payload: events.Payload(payload)}
}

func (s *Service) appendEvent(tx *store.Tx, ev events.Event) error {
	if s.env.Events == nil {
		return nil
	}
	_, err := s.env.Events.Append(tx, ev)
	return err
}

// CreateMethod saves a payment method for the caller.
func (s *Service) CreateMethod(ctx context.Context, in MethodInput) (*PaymentMethod, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var out PaymentMethod
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		now := s.now()
		m := PaymentMethod{ID: newID("pm", now), UserID: p.UserID, Type: in.Type, Name: in.Name, Status: "active",
			Details: sanitizeDetails(in.Details), CreatedAt: now, UpdatedAt: now}
		if in.IsDefault {
			if err := tx.Put(bucketDefaults, p.UserID, m.ID); err != nil {
				return err
			}
			m.IsDefault = true
		}
		if err := tx.Put(bucketMethods, userKey(p.UserID, m.ID), m); err != nil {
			return err
		}
		out = m
		return s.appendEvent(tx, methodEvent("wallet.payment_method.created", p.UserID, auth.ClientIP(ctx), m.ID,
			map[string]any{"type": m.Type, "is_default": m.IsDefault}))
	})
	if err != nil {
		return nil, fault.Wrap("save the payment method", err)
	}
	return &out, nil
}

// ListMethods answers the caller's methods, oldest first.
func (s *Service) ListMethods(ctx context.Context) ([]PaymentMethod, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var out []PaymentMethod
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		out, err = store.Under[PaymentMethod](tx, bucketMethods, p.UserID+"/")
		if err != nil {
			return err
		}
		var def string
		if _, err := tx.Get(bucketDefaults, p.UserID, &def); err != nil {
			return err
		}
		for i := range out {
			out[i].IsDefault = out[i].ID == def
		}
		return nil
	})
	if err != nil {
		return nil, fault.Internal("list payment methods", err)
	}
	if out == nil {
		out = []PaymentMethod{}
	}
	return out, nil
}

func getMethod(tx *store.Tx, userID, id string) (*PaymentMethod, error) {
	var m PaymentMethod
	ok, err := tx.Get(bucketMethods, userKey(userID, id), &m)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFound("payment method", id)
	}
	var def string
	if _, err := tx.Get(bucketDefaults, userID, &def); err != nil {
		return nil, err
	}
	m.IsDefault = m.ID == def
	return &m, nil
}

// GetMethod answers one of the caller's methods.
func (s *Service) GetMethod(ctx context.Context, ref MethodRef) (*PaymentMethod, error) {
	id := ref.ID
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := validID("id", id); err != nil {
		return nil, err
	}
	var out *PaymentMethod
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		out, err = getMethod(tx, p.UserID, id)
		return err
	})
	if err != nil {
		return nil, fault.Wrap("read the payment method", err)
	}
	return out, nil
}

// SetDefaultMethod makes one of the caller's methods the default.
func (s *Service) SetDefaultMethod(ctx context.Context, ref MethodRef) (*PaymentMethod, error) {
	yes := true
	return s.UpdateMethod(ctx, MethodChange{MethodRef: ref, Body: MethodUpdate{IsDefault: &yes}})
}

// UpdateMethod changes one of the caller's methods.
func (s *Service) UpdateMethod(ctx context.Context, req MethodChange) (*PaymentMethod, error) {
	id, in := req.ID, req.Body
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := validID("id", id); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var out *PaymentMethod
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		m, err := getMethod(tx, p.UserID, id)
		if err != nil {
			return err
		}
		changed := map[string]any{}
		if in.Details != nil {
			m.Details = sanitizeDetails(in.Details)
			changed["details"] = true
		}
		if in.Status != nil && *in.Status != m.Status {
			if *in.Status == "inactive" && m.IsDefault && tx.CountPrefix(bucketMethods, p.UserID+"/") > 1 {
				return fault.Invalid("status", "the default payment method cannot be made inactive; make another method default first")
			}
			m.Status = *in.Status
			changed["status"] = m.Status
		}
		if in.IsDefault != nil {
			switch {
			case *in.IsDefault && !m.IsDefault:
				if m.Status != "active" {
					return fault.Invalid("is_default", "an inactive payment method cannot be the default; make it active first")
				}
				if err := tx.Put(bucketDefaults, p.UserID, m.ID); err != nil {
					return err
				}
				m.IsDefault = true
				changed["is_default"] = true
			case !*in.IsDefault && m.IsDefault:
				return fault.Invalid("is_default", "a user always has exactly one default payment method; make another method default instead")
			}
		}
		m.UpdatedAt = s.now()
		stored := *m
		stored.IsDefault = false // the default lives in bucketDefaults only
		if err := tx.Put(bucketMethods, userKey(p.UserID, m.ID), stored); err != nil {
			return err
		}
		out = m
		kind := "wallet.payment_method.updated"
		if _, ok := changed["is_default"]; ok {
			kind = "wallet.payment_method.default_changed"
		}
		return s.appendEvent(tx, methodEvent(kind, p.UserID, auth.ClientIP(ctx), m.ID, changed))
	})
	if err != nil {
		return nil, fault.Wrap("update the payment method", err)
	}
	return out, nil
}

// Secrets dropped from details, and keys holding a card or account number
// (compared lower-case without separators).
var (
	secretKeys = map[string]bool{"cvc": true, "cvv": true, "cvv2": true, "cvc2": true, "securitycode": true, "cardsecuritycode": true,
		"pin": true, "password": true, "secret": true, "privatekey": true, "seed": true, "mnemonic": true, "seedphrase": true}
	numberKeys = map[string]bool{"number": true, "cardnumber": true, "pan": true, "accountnumber": true, "iban": true, "ccnumber": true}
)

func normKey(k string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(k) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sanitizeDetails keeps what identifies a method to its owner and drops
// what could pay with it: numbers become brand + last4, secrets vanish.
func sanitizeDetails(d map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range d {
		nk := normKey(k)
		if secretKeys[nk] {
			continue
		}
		if s, ok := v.(string); ok && numberKeys[nk] {
			digits := onlyDigits(s)
			if len(digits) >= 4 {
				out["last4"] = digits[len(digits)-4:]
			}
			if _, has := d["brand"]; !has && nk != "iban" && nk != "accountnumber" {
				out["brand"] = cardBrand(digits)
			}
			continue
		}
		if s, ok := v.(string); ok && looksLikePAN(s) {
			out[k] = mask(s)
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			out[k] = sanitizeDetails(x)
		case []any:
			var arr []any
			for _, e := range x {
				switch y := e.(type) {
				case map[string]any:
					arr = append(arr, sanitizeDetails(y))
				case string:
					if looksLikePAN(y) {
						arr = append(arr, mask(y))
					} else {
						arr = append(arr, y)
					}
				default:
					arr = append(arr, y)
				}
			}
			out[k] = arr
		default:
			out[k] = v
		}
	}
	return out
}

// mask keeps the last four digits of a card number found under any key.
func mask(s string) string {
	d := onlyDigits(s)
	return "**** " + d[len(d)-4:]
}

func onlyDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// looksLikePAN: 12-19 digits (spaces and dashes allowed) passing Luhn.
func looksLikePAN(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r == ' ' || r == '-') {
			return false
		}
	}
	d := onlyDigits(s)
	if len(d) < 12 || len(d) > 19 {
		return false
	}
	sum := 0
	for i := 0; i < len(d); i++ {
		n := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return sum%10 == 0
}

func cardBrand(d string) string {
	switch {
	case strings.HasPrefix(d, "4"):
		return "visa"
	case len(d) >= 2 && d[0] == '5' && d[1] >= '1' && d[1] <= '5', len(d) >= 4 && d[:4] >= "2221" && d[:4] <= "2720":
		return "mastercard"
	case strings.HasPrefix(d, "34"), strings.HasPrefix(d, "37"):
		return "amex"
	case strings.HasPrefix(d, "6011"), strings.HasPrefix(d, "65"):
		return "discover"
	}
	return "unknown"
}
