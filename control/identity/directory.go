package identity

import (
	"context"

	"deckhand/control/domain"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// CheckUserExists is the resource check identity provides to the domains
// that name accounts (a project's owner, a permission's user): it reads the
// account id from the parameter "user_id" and answers 404 when no such
// account exists. Accounts are never deleted, so an answer stays true.
const CheckUserExists = "user.exists"

func (s *Service) userExists(ctx context.Context, param func(string) string) error {
	id := param("user_id")
	return fault.Wrap("look up the user", s.db.ViewContext(ctx, func(tx *store.Tx) error {
		_, err := userOr(tx, id, fault.NotFound("user", id))
		return err
	}))
}

// contact is what identity provides to domain.Accounts: an account's
// username and address, nil when no account has id.
func (s *Service) contact(ctx context.Context, id string) (*domain.Contact, error) {
	var out *domain.Contact
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		u, err := getUser(tx, id)
		if u != nil {
			out = &domain.Contact{Username: u.Username, Email: u.Email}
		}
		return err
	})
	return out, fault.Wrap("look up the user", err)
}

// idByEmail is what identity provides to domain.Accounts for a lookup by
// address: the account's id, "" when none has the address (in any of its
// spellings) or it is not an address at all.
func (s *Service) idByEmail(ctx context.Context, email string) (string, error) {
	e, err := normalizeEmail("email", email)
	if err != nil {
		return "", nil
	}
	var id string
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		u, err := userByIndex(tx, bucketEmails, e)
		if u != nil {
			id = u.ID
		}
		return err
	})
	return id, fault.Wrap("look up the user", err)
}
