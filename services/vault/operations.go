package vault

import (
	"context"
	"strconv"

	"deckhand/platform/fault"
)

// KeyRef names a key in the path.
type KeyRef struct {
	Key string `path:"key" doc:"1 to 128 of A-Z a-z 0-9 . _ - (not . or ..)"`
}

// ValidateParams checks the key's length and characters.
func (r KeyRef) ValidateParams() error { return ValidKey(r.Key) }

// ListQuery is the query of GET /api/v1/vault/keys.
type ListQuery struct {
	Prefix string `query:"prefix" doc:"only keys starting with this; at most 128 of the key characters A-Z a-z 0-9 . _ - (else 400)"`
	After  string `query:"after" doc:"start after this key (the previous page's next); the key rule as for prefix (else 400)"`
	Limit  int    `query:"limit" minimum:"1" maximum:"10000" default:"1000" doc:"at most this many keys"`
}

// KeyRead is a key's record with its version as the ETag.
type KeyRead struct {
	ETag string `header:"ETag" doc:"the version, quoted: pass it as If-Match to write only at this version"`
	Body Record
}

func answer(rec Record) KeyRead {
	return KeyRead{ETag: `"` + strconv.FormatInt(rec.Version, 10) + `"`, Body: rec}
}

// KeyWrite is a PUT: the value, with optional preconditions.
type KeyWrite struct {
	KeyRef
	IfMatch     string `header:"If-Match" doc:"\"N\" (the ETag): write only at version N, else 412; * : only an existing key"`
	IfNoneMatch string `header:"If-None-Match" doc:"*: create only (412 when the key exists)"`
	Body        Write
}

// ValidateParams checks the key and the preconditions before the body is read.
func (in KeyWrite) ValidateParams() error {
	if err := ValidKey(in.Key); err != nil {
		return err
	}
	_, err := ParsePrecondition(in.IfMatch, in.IfNoneMatch)
	return err
}

// KeyWritten is a written record, 201 when the key was created.
type KeyWritten struct {
	ETag   string `header:"ETag" doc:"the new version, quoted"`
	Status int
	Body   Record
}

// KeyPatch is a PATCH: an object merged into the stored one.
type KeyPatch struct {
	KeyRef
	IfMatch     string `header:"If-Match" doc:"\"N\" (the ETag): write only at version N, else 412; * : only an existing key"`
	IfNoneMatch string `header:"If-None-Match" doc:"not accepted: PATCH changes an existing key (400 when given)"`
	Body        Write
}

// ValidateParams checks the key and If-Match before the body is read.
func (in KeyPatch) ValidateParams() error {
	if err := ValidKey(in.Key); err != nil {
		return err
	}
	p, err := ParsePrecondition(in.IfMatch, in.IfNoneMatch)
	if err == nil && p.NoneMatch {
		err = fault.Invalid("If-None-Match", "PATCH changes an existing key; If-None-Match does not apply")
	}
	return err
}

// KeyDelete is a DELETE, optionally at one version.
type KeyDelete struct {
	KeyRef
	IfMatch string `header:"If-Match" doc:"\"N\" (the ETag): delete only at version N, else 412"`
}

// ValidateParams checks the key and If-Match.
func (in KeyDelete) ValidateParams() error {
	if err := ValidKey(in.Key); err != nil {
		return err
	}
	_, err := ParsePrecondition(in.IfMatch, "")
	return err
}

// List answers a page of live keys, never values.
func (s *Service) List(ctx context.Context, q ListQuery) (List, error) {
	return s.ListKeys(ctx, q.Prefix, q.After, q.Limit)
}

// Read answers a key's record and ETag.
func (s *Service) Read(ctx context.Context, in KeyRef) (KeyRead, error) {
	rec, err := s.Get(ctx, in.Key)
	if err != nil {
		return KeyRead{}, err
	}
	return answer(rec), nil
}

// Store creates (201) or replaces (200) a key's value.
func (s *Service) Store(ctx context.Context, in KeyWrite) (KeyWritten, error) {
	p, _ := ParsePrecondition(in.IfMatch, in.IfNoneMatch) // checked by ValidateParams
	rec, created, err := s.Put(ctx, in.Key, in.Body, p)
	if err != nil {
		return KeyWritten{}, err
	}
	out := KeyWritten{ETag: answer(rec).ETag, Status: 200, Body: rec}
	if created {
		out.Status = 201
	}
	return out, nil
}

// Merge merges an object into a stored object value.
func (s *Service) Merge(ctx context.Context, in KeyPatch) (KeyRead, error) {
	p, _ := ParsePrecondition(in.IfMatch, "")
	rec, err := s.Patch(ctx, in.Key, in.Body, p)
	if err != nil {
		return KeyRead{}, err
	}
	return answer(rec), nil
}

// Remove deletes a key, with If-Match only at that version.
func (s *Service) Remove(ctx context.Context, in KeyDelete) error {
	p, _ := ParsePrecondition(in.IfMatch, "")
	return s.Delete(ctx, in.Key, p)
}
