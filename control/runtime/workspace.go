package runtime

import (
	"context"
	"io"
)

// LabelWorkspaceCopy marks the helper (a container or a Pod) a driver
// makes to read or write a workspace for a move: the workspace's id. It
// never carries LabelContainer, so lists and watches skip it.
const LabelWorkspaceCopy = "deckhand.workspace-copy"

// WorkspaceMover is a driver that streams a workspace out of its engine
// and into it, as a tar archive whose entries are relative to the
// workspace's root. Any two movers can move a stopped container's
// workspace between them, whatever their engines: the archive is the one
// format they share.
type WorkspaceMover interface {
	// HasWorkspace says whether the engine holds workspace ws (the id of
	// the container that made it).
	HasWorkspace(ctx context.Context, ws string) (bool, error)
	// ExportWorkspace streams workspace ws's files; image is what a
	// helper is made of (the container's own image, which holds what the
	// helper needs). ErrNotFound when the engine holds no such
	// workspace. The caller closes the stream, which removes the helper;
	// an error while reading means the archive is incomplete.
	ExportWorkspace(ctx context.Context, ws, image string) (io.ReadCloser, error)
	// ImportWorkspace makes workspace ws (labelled for it and project,
	// as a create makes it) and fills it from archive.
	ImportWorkspace(ctx context.Context, ws, project, image string, archive io.Reader) error
}
