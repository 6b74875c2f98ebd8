package identity

import (
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// Sweep runs the janitor's sweep now (tests).
func Sweep(s *Service) { s.sweepExpired() }

// Fixtures of the legacy store layout (master key in the store), so the
// migration test writes what stores written before held.
const (
	LegacyJWTLabel = legacyJWTLabel
	LegacyEncLabel = legacyEncLabel
	LegacyMACLabel = legacyMACLabel
)

// Derive is the legacy key derivation (HMAC-SHA256(master, label)).
func Derive(master []byte, label string) []byte { return derive(master, label) }

// HashPassword is the stored password form.
func HashPassword(pw string) (string, error) { return secrets.HashPassword(pw) }

// CacheVersionAfter is the credential cache's version change after
// handling one message on the cache channel (tests).
func CacheVersionAfter(s *Service, payload func(self string) string) uint64 {
	before := s.cache.version.Load()
	s.cache.handle(store.Notification{Payload: payload(s.cache.self)})
	return s.cache.version.Load() - before
}
