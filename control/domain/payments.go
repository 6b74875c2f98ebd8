package domain

import (
	"errors"
	"sync/atomic"

	"deckhand/control/money"
	"deckhand/platform/store"
)

// Charge is one debit a selling domain (the catalog's image purchase) asks
// of the wallet.
type Charge struct {
	UserID string
	Amount money.Amount
	// Kind is the ledger transaction type ("image_purchase").
	Kind string
	// Reference names what was bought (an image id), Description says it
	// in words for the transaction list and invoices.
	Reference   string
	Description string
}

// Payer debits a user's general balance inside the caller's own store
// transaction, so the debit, its ledger transaction and what it pays for
// commit together or not at all. It answers the remaining general balance,
// or a typed error (insufficient balance: 400) that rolls the caller back.
type Payer interface {
	Charge(tx *store.Tx, c Charge) (remaining money.Amount, err error)
}

// Payments is where the wallet provides its Payer and selling domains find
// it without importing the wallet. A domain that charges calls Require when
// it is built; the server refuses to start when nobody provides one.
type Payments struct {
	payer    seam[Payer]
	required atomic.Bool
}

// Provide registers the wallet's Payer.
func (p *Payments) Provide(payer Payer) { p.payer.provide(payer, "payments") }

// Require marks the seam as needed by a domain.
func (p *Payments) Require() { p.required.Store(true) }

// Missing reports a required seam that nobody provides.
func (p *Payments) Missing() bool { return p.required.Load() && p.payer.get() == nil }

// Charge debits through the provided Payer.
func (p *Payments) Charge(tx *store.Tx, c Charge) (money.Amount, error) {
	payer := p.payer.get()
	if payer == nil {
		return 0, errNoPayer
	}
	return payer.Charge(tx, c)
}

var errNoPayer = errors.New("no domain provides payments")
