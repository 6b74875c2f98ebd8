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
