package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	nf := fault.NotFound("image", "x")
	cases := []struct {
		name string
		err  error
		code string // "" means nil
		same bool   // the typed error itself comes back
	}{
		{"nil", nil, "", false},
		{"untyped", errors.New("disk"), fault.CodeInternal, false},
		{"database gone", fmt.Errorf("read: %w", store.ErrUnavailable), fault.CodeUnavailable, false},
		{"typed", nf, fault.CodeNotFound, true},
		{"typed, wrapped", fmt.Errorf("wrapped: %w", nf), fault.CodeNotFound, true},
		{"bad query", fmt.Errorf("list: %w", &store.QueryError{Field: "amount", Rule: "must be an integer"}), fault.CodeInvalid, false},
		{"unique index", fmt.Errorf("put: %w", &store.DuplicateError{Table: "users", Index: "users_email_key", Fields: []string{"email"}}), fault.CodeConflict, false},
	}
	for _, c := range cases {
		err := fault.Wrap("op", c.err)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v, want nil", c.name, err)
			}
			continue
		}
		var pe *fault.Error
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v, want code %s", c.name, err, c.code)
		}
		if c.same && err != error(nf) {
			t.Errorf("%s: %v is not the typed error itself", c.name, err)
		}
	}
}

// The store's refusals reach the client as the field and rule (400) or the
// fields of the unique index (409), never as an internal error.
func TestStoreRefusals(t *testing.T) {
	t.Parallel()
	e := fault.Wrap("list invoices", &store.QueryError{Field: "amount", Rule: "must be an integer"})
	var pe *fault.Error
	if !errors.As(e, &pe) || pe.Field != "amount" || pe.Status() != 400 || pe.Message != "amount: must be an integer" {
		t.Errorf("query error: %+v", pe)
	}
	e = fault.AsError(fmt.Errorf("x: %w", &store.DuplicateError{Table: "users", Index: "users_email_key", Fields: []string{"email"}}))
	if !errors.As(e, &pe) || pe.Status() != 409 || pe.Details != "email" {
		t.Errorf("duplicate: %+v", pe)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	disk := errors.New("permission denied")
	cases := []struct {
		err  error
		want string
	}{
		{fault.Invalid("name", "required"), "name: required"},
		{&fault.Error{Code: fault.CodeBackend, Message: "read the schedules file", Cause: disk}, "read the schedules file: permission denied"},
		{fmt.Errorf("load: %w", fault.Invalid("id", "bad")), "id: bad"},
		{disk, "permission denied"},
	}
	for _, c := range cases {
		if got := fault.Text(c.err); got != c.want {
			t.Errorf("Text(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
