package deckhand

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// wireEntry is a files service entry as it answers it.
type wireEntry struct {
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	Type     string    `json:"type"`
	Size     int64     `json:"size"`
	Mode     string    `json:"mode"`
	Modified time.Time `json:"modified"`
	Owner    string    `json:"owner"`
	ETag     string    `json:"etag"`
}

func (e wireEntry) info() FileInfo {
	return FileInfo{Name: e.Name, Path: e.Path, Type: e.Type, Size: e.Size, Mode: e.Mode, Modified: e.Modified, Owner: e.Owner, ETag: e.ETag}
}

// Stat describes path (a link itself, not its target); a path that does
// not exist is an *Error with status 404 (IsNotFound).
func (f Files) Stat(ctx context.Context, path string) (FileInfo, error) {
	var e wireEntry
	if err := f.c.Call(ctx, http.MethodGet, "files", "/api/v1/files/stat", url.Values{"path": {path}}, nil, &e); err != nil {
		return FileInfo{}, err
	}
	return e.info(), nil
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
