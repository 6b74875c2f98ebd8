package domain

import (
	"context"
	"sync"
)

// Contact is what the identity domain tells other domains about an
// account for documents made for its owner (an invoice's buyer).
type Contact struct {
	Username string
	Email    string
}

// Accounts is where the identity domain provides account contacts and
// other domains find them without reading identity's buckets.
type Accounts struct {
	mu      sync.RWMutex
	find    func(ctx context.Context, id string) (*Contact, error)
	byEmail func(ctx context.Context, email string) (string, error)
}

// Provide registers identity's lookup: the contact of account id, nil
// when no account has it.
func (a *Accounts) Provide(find func(ctx context.Context, id string) (*Contact, error)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.find != nil {
		panic("domain: accounts provided twice")
	}
	a.find = find
}

// Contact is the contact of account id: nil when no account has it, or
// when no domain provides accounts (a nil *Accounts included).
func (a *Accounts) Contact(ctx context.Context, id string) (*Contact, error) {
	if a == nil {
		return nil, nil
	}
	a.mu.RLock()
	find := a.find
	a.mu.RUnlock()
	if find == nil {
		return nil, nil
	}
	return find(ctx, id)
}

// ProvideByEmail registers identity's lookup of an account id by email
// address (any spelling of it): "" when no account has it.
func (a *Accounts) ProvideByEmail(find func(ctx context.Context, email string) (string, error)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byEmail != nil {
		panic("domain: accounts by email provided twice")
	}
	a.byEmail = find
}

// IDByEmail is the id of the account with email: "" when none has it, or
// when no domain provides accounts (a nil *Accounts included).
func (a *Accounts) IDByEmail(ctx context.Context, email string) (string, error) {
	if a == nil {
		return "", nil
	}
	a.mu.RLock()
	find := a.byEmail
	a.mu.RUnlock()
	if find == nil {
		return "", nil
	}
	return find(ctx, email)
}
