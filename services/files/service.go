// Package files owns the container's file service: the REST file API over
// one confined root (--files-root), WebDAV on the same root under /dav/, a
// watch stream of changes, and the version endpoint. Paths in the API are
// absolute within the root ("/notes/a.txt"); every access goes through an
// os.Root, so neither ".." nor a symbolic link leads outside it, and runs
// with the file-system credentials of --files-user when one is set.
package files

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
)

// APIVersion is the version of the file service's HTTP API, reported as
// `version` by GET /api/v1/version next to the build's `server_version`.
const APIVersion = "v1"

// Settings are the file service's flags.
type Settings struct {
	// Root is the directory the API serves; nothing outside it is reachable.
	Root string
	// User is the OS user (name or uid) file operations run as; empty
	// means the agent's own user.
	User string
	// MaxUpload caps one upload's size ("0" for no cap), e.g. "10G".
	MaxUpload string
}

// Flags declares --files-root, --files-user and --files-max-upload.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Root, "files-root", "/", "directory the file service serves; nothing outside it is reachable")
	fs.StringVar(&s.User, "files-user", "", "OS user (name or uid) file operations run as; needs the agent to run as root (default: the agent's user)")
	fs.StringVar(&s.MaxUpload, "files-max-upload", "16G", "largest accepted upload, bytes with an optional K, M, G or T suffix; 0 for no limit (larger uploads answer 413)")
}

// Validate checks that the root is a directory and the limit parses.
func (s *Settings) Validate() error {
	st, err := os.Stat(s.Root)
	if err != nil {
		return fmt.Errorf("--files-root %s: %w", s.Root, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--files-root %s: not a directory", s.Root)
	}
	if _, err := parseSize(s.MaxUpload); err != nil {
		return err
	}
	_, err = lookupIdentity(s.User)
	return err
}

func parseSize(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	mult := int64(1)
	if i := strings.Index("KMGT", strings.ToUpper(v[len(v)-1:])); i >= 0 {
		mult, v = 1<<(10*(i+1)), v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("--files-max-upload %s: must be a byte count with an optional K, M, G or T suffix", v)
	}
	return n * mult, nil
}

// Service is the file service.
type Service struct {
	deps      contract.ServiceDeps
	root      *os.Root
	id        *identity
	maxUpload int64
	locks     pathLocks
	watch     *watcher
	dav       *davServer
	// umask is the process's file mode creation mask, which files WebDAV
	// creates get applied as the kernel applies it to directories.
	umask     fs.FileMode
	sums      *sumCache
	closeOnce sync.Once
}

// New builds the file service over its root.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = &Settings{Root: "/", MaxUpload: "16G"}
	}
	max, err := parseSize(set.MaxUpload)
	if err != nil {
		return nil, err
	}
	id, err := lookupIdentity(set.User)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(set.Root)
	if err != nil {
		return nil, fmt.Errorf("--files-root %s: %w", set.Root, err)
	}
	deps = deps.WithDefaults()
	if deps.Store != nil {
		if err := deps.Store.Declare(context.Background(), uploadTable); err != nil {
			return nil, fmt.Errorf("files: %w", err)
		}
	}
	s := &Service{deps: deps, root: root, id: id, maxUpload: max, umask: processUmask(),
		sums: newSumCache(4096)}
	s.locks.m = map[string]*pathLock{}
	s.sweepUploads(24 * time.Hour)
	s.watch = newWatcher(s, 4096)
	s.dav = newDAV(s)
	return s, nil
}

// StreamsBodies makes the host hand uploads to the handlers as streams;
// a 2 GiB upload must never sit in memory. The read deadline covers one
// whole request, so it is generous.
func (s *Service) StreamsBodies() time.Duration { return time.Hour }

// Close stops watching and releases the root.
func (s *Service) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.watch.close()
		err = s.root.Close()
	})
	return err
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "files",
		Title:   "deckhand file service",
		Version: platform.Version,
		Description: "Files of the container over REST and WebDAV (/dav/), confined to --files-root. Paths are absolute " +
			"within the root (/notes/a.txt). A \"..\" climbing above the root, a symbolic link leading outside it or a " +
			"symbolic-link loop answers 403 OUTSIDE_ROOT; every access resolves through Go's os.Root (openat per " +
			"component), not string checks alone. With --files-user every operation runs with that user's file-system " +
			"ids (setfsuid/setfsgid on a locked thread), so the kernel checks permissions as for that user and new " +
			"files belong to it. Unknown paths answer 404 NOT_FOUND, refusals by the OS 403 FORBIDDEN with the OS " +
			"reason (permission denied, read-only file system), a full disk 507 INSUFFICIENT_STORAGE, an upload over " +
			"--files-max-upload 413 PAYLOAD_TOO_LARGE. ETags are strong: \"<mtime ns>-<size>-<inode>\" in hex. " +
			"Query parameters follow one grammar on every service: booleans are true, false, 1 or 0; a parameter that " +
			"breaks its rule answers 400 INVALID naming it. Errors are {\"code\",\"details\",\"message\"}.",
	}
}

// pathLocks serialises writers of one path in this process, so an If-Match
// check and the rename that follows it are one step: of two uploads
// carrying the same ETag exactly one wins.
type pathLocks struct {
	mu sync.Mutex
	m  map[string]*pathLock
}

type pathLock struct {
	mu   sync.Mutex
	refs int
}

func (l *pathLocks) lock(key string) func() {
	l.mu.Lock()
	pl := l.m[key]
	if pl == nil {
		pl = &pathLock{}
		l.m[key] = pl
	}
	pl.refs++
	l.mu.Unlock()
	pl.mu.Lock()
	return func() {
		pl.mu.Unlock()
		l.mu.Lock()
		if pl.refs--; pl.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}
