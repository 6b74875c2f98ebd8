package contract

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"deckhand/platform/store"
)

// ErrServiceRunning means another process already runs the service on
// this data directory (its store file is locked).
var ErrServiceRunning = errors.New("the service is already running on this data directory")

// OpenServiceData creates <data>/<name> and opens the service's own store,
// <data>/<name>/store.db. Every runner (the agent in-process, `deckhand
// service NAME`, deckhand-display) calls it, so a service finds the same
// data whether it runs in-process or isolated; toggling --isolate never
// moves or hides it. The caller closes the store.
func OpenServiceData(data, name string) (dir string, db *store.DB, err error) {
	if data == "" {
		return "", nil, errors.New("--data: must not be empty")
	}
	dir = filepath.Join(data, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("--data %s: %w", data, err)
	}
	path := filepath.Join(dir, "store.db")
	db, err = store.Open(path)
	if errors.Is(err, store.ErrLocked) {
		return "", nil, fmt.Errorf("service %s: %w (%s is locked)", name, ErrServiceRunning, path)
	}
	if err != nil {
		return "", nil, fmt.Errorf("service %s: %w", name, err)
	}
	return dir, db, nil
}
