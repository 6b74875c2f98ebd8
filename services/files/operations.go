package files

import (
	"context"
)

// PathQuery names one path within the root.
type PathQuery struct {
	Path string `query:"path" required:"true" doc:"absolute path within the root, e.g. /notes/a.txt"`
}

// DeleteQuery names what DELETE /api/v1/files removes.
type DeleteQuery struct {
	PathQuery
	Recursive bool `query:"recursive" default:"false" doc:"delete a directory with everything in it"`
}

// UploadRef names a resumable upload in the path.
type UploadRef struct {
	ID string `path:"id" doc:"the upload's id"`
}

// UploadStarted is a new resumable upload with where to send its bytes.
type UploadStarted struct {
	Location string `header:"Location" doc:"the upload's URL"`
	Body     Upload
}

// UploadState is a resumable upload with its offset as a header too.
type UploadState struct {
	Offset int64 `header:"Upload-Offset" doc:"bytes the service holds: continue from there"`
	Body   Upload
}

// StatPath describes one path without following a final link.
func (s *Service) StatPath(_ context.Context, in PathQuery) (Entry, error) { return s.Stat(in.Path) }

// ChecksumPath answers a file's SHA-256 with its size and ETag.
func (s *Service) ChecksumPath(_ context.Context, in PathQuery) (Checksum, error) {
	return s.Checksum(in.Path)
}

// Remove deletes a file, link or directory.
func (s *Service) Remove(_ context.Context, in DeleteQuery) error {
	return s.Delete(in.Path, in.Recursive)
}

// MakeDir creates a directory.
func (s *Service) MakeDir(_ context.Context, in MkdirRequest) (Entry, error) { return s.Mkdir(in) }

// MoveEntry moves or renames a path.
func (s *Service) MoveEntry(_ context.Context, in MoveRequest) (Entry, error) { return s.Move(in) }

// CopyEntry copies a path (directories recursively).
func (s *Service) CopyEntry(_ context.Context, in MoveRequest) (Entry, error) { return s.Copy(in) }

// ChangeMode changes permission bits.
func (s *Service) ChangeMode(_ context.Context, in ChmodRequest) (Entry, error) { return s.Chmod(in) }

// ChangeOwner changes owner and group.
func (s *Service) ChangeOwner(_ context.Context, in ChownRequest) (Entry, error) { return s.Chown(in) }
