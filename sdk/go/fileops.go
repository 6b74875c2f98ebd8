package deckhand

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/deckhand-dev/deckhand/sdk/go/api/files"
)

// Stat describes path (a link itself, not its target); a path that does
// not exist is an *Error with status 404 (IsNotFound).
func (f Files) Stat(ctx context.Context, path string) (FileInfo, error) {
	var e files.Entry
	if err := f.c.Call(ctx, http.MethodGet, "files", "/api/v1/files/stat", url.Values{"path": {path}}, nil, &e); err != nil {
		return FileInfo{}, err
	}
	fi := fileInfo(e)
	if e.Etag != nil {
		fi.ETag = *e.Etag
	}
	return fi, nil
}

// Remove deletes path (a link itself, never its target); a directory
// needs recursive unless it is empty.
func (f Files) Remove(ctx context.Context, path string, recursive bool) error {
	return f.c.Call(ctx, http.MethodDelete, "files", "/api/v1/files", url.Values{"path": {path}, "recursive": {strconv.FormatBool(recursive)}}, nil, nil)
}

// IsNotFound reports whether err is (or wraps) an *Error with status 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}
