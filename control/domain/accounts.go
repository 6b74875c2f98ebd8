package domain

import "context"

// Contact is what the identity domain tells other domains about an
// account for documents made for its owner (an invoice's buyer).
type Contact struct {
	Username string
	Email    string
}

// Accounts is where the identity domain provides account contacts and
// other domains find them without reading identity's buckets.
type Accounts struct {
	find    seam[func(ctx context.Context, id string) (*Contact, error)]
	byEmail seam[func(ctx context.Context, email string) (string, error)]
}

// Provide registers identity's lookup: the contact of account id, nil
// when no account has it.
func (a *Accounts) Provide(find func(ctx context.Context, id string) (*Contact, error)) {
	a.find.provide(find, "accounts")
}

// Contact is the contact of account id: nil when no account has it, or
// when no domain provides accounts (a nil *Accounts included).
func (a *Accounts) Contact(ctx context.Context, id string) (*Contact, error) {
	if a == nil || a.find.get() == nil {
		return nil, nil
	}
	return a.find.get()(ctx, id)
}

// ProvideByEmail registers identity's lookup of an account id by email
// address (any spelling of it): "" when no account has it.
func (a *Accounts) ProvideByEmail(find func(ctx context.Context, email string) (string, error)) {
	a.byEmail.provide(find, "accounts by email")
}

// IDByEmail is the id of the account with email: "" when none has it, or
// when no domain provides accounts (a nil *Accounts included).
func (a *Accounts) IDByEmail(ctx context.Context, email string) (string, error) {
	if a == nil || a.byEmail.get() == nil {
		return "", nil
	}
	return a.byEmail.get()(ctx, email)
}
