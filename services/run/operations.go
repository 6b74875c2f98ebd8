package run

import (
	"context"
)

// ProfileRef names a profile in the path.
type ProfileRef struct {
	Profile string `path:"profile" doc:"the profile's name"`
}

// SourceRef names a source in the path.
type SourceRef struct {
	SourceID string `path:"source_id" doc:"the source's id"`
}

// ProfileEdit is a PATCH of a profile.
type ProfileEdit struct {
	ProfileRef
	IfMatch string `header:"If-Match" doc:"the version the change is based on; a stale one answers 409 CONFLICT"`
	Body    PatchProfile
}

// ValidateParams checks If-Match before the body is read.
func (in ProfileEdit) ValidateParams() error {
	_, _, err := ifMatch(in.IfMatch)
	return err
}

// SourceEdit is a PATCH of a source.
type SourceEdit struct {
	SourceRef
	IfMatch string `header:"If-Match" doc:"the version the change is based on; a stale one answers 409 CONFLICT"`
	Body    PatchSource
}

// ValidateParams checks If-Match before the body is read.
func (in SourceEdit) ValidateParams() error {
	_, _, err := ifMatch(in.IfMatch)
	return err
}

// SourceDelete is a DELETE of a source.
type SourceDelete struct {
	SourceRef
	RemoveFiles bool `query:"remove_files" default:"false" doc:"also delete the synced directory"`
}

// ListProfiles answers every profile and the active one.
func (s *Service) ListProfiles(context.Context) (ProfileList, error) { return s.Profiles() }

// NewProfile creates a profile.
func (s *Service) NewProfile(_ context.Context, r CreateProfile) (Profile, error) {
	return s.CreateProfile(r)
}

// EditProfile changes a profile, at the If-Match version when given.
func (s *Service) EditProfile(_ context.Context, in ProfileEdit) (Profile, error) {
	v, _, _ := ifMatch(in.IfMatch) // checked by ValidateParams
	return s.PatchProfile(in.Profile, v, in.Body)
}

// RemoveProfile deletes a profile.
func (s *Service) RemoveProfile(_ context.Context, in ProfileRef) error {
	return s.DeleteProfile(in.Profile)
}

// ActivateProfile makes a profile the active one.
func (s *Service) ActivateProfile(_ context.Context, in ProfileRef) (Profile, error) {
	return s.SelectProfile(in.Profile)
}

// ListSources answers every source with its last sync.
func (s *Service) ListSources(context.Context) (SourceList, error) { return s.Sources() }

// NewSource adds a source.
func (s *Service) NewSource(_ context.Context, r CreateSource) (Source, error) {
	return s.CreateSource(r)
}

// EditSource changes a source, at the If-Match version when given.
func (s *Service) EditSource(_ context.Context, in SourceEdit) (Source, error) {
	v, _, _ := ifMatch(in.IfMatch) // checked by ValidateParams
	return s.PatchSource(in.SourceID, v, in.Body)
}

// RemoveSource deletes a source, and its directory when asked.
func (s *Service) RemoveSource(_ context.Context, in SourceDelete) error {
	return s.DeleteSource(in.SourceID, in.RemoveFiles)
}

// SyncSource syncs one source now.
func (s *Service) SyncSource(ctx context.Context, in SourceRef) (Source, error) {
	return s.Sync(ctx, in.SourceID)
}

// SourceDiagnostics answers a source's last sync.
func (s *Service) SourceDiagnostics(_ context.Context, in SourceRef) (Diagnostics, error) {
	return s.Diagnostics(in.SourceID)
}
