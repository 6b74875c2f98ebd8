package files

import (
	"fmt"
	"io/fs"
	"os/user"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Entry describes one file, directory or link.
type Entry struct {
	Name     string    `json:"name" required:"true"`
	Path     string    `json:"path" required:"true" doc:"absolute within the root"`
	Type     string    `json:"type" required:"true" enum:"file,dir,symlink,other"`
	Size     int64     `json:"size" required:"true"`
	Mode     string    `json:"mode" required:"true" doc:"permission bits in octal, e.g. 0644 (setuid, setgid and sticky included as 4000, 2000, 1000)"`
	Perm     string    `json:"permissions" required:"true" doc:"ls -l style, e.g. -rw-r--r--"`
	Owner    string    `json:"owner" required:"true" doc:"user name, or the uid when it has none"`
	Group    string    `json:"group" required:"true" doc:"group name, or the gid when it has none"`
	UID      uint32    `json:"uid" required:"true"`
	GID      uint32    `json:"gid" required:"true"`
	Modified time.Time `json:"modified" required:"true"`
	Target   string    `json:"symlink_target,omitempty" doc:"where a symbolic link points, as stored in the link"`
	ETag     string    `json:"etag,omitempty" doc:"for regular files: the value If-Match and If-None-Match compare"`
}

// specialBits are the mode bits octal notation writes as 4000, 2000, 1000.
var specialBits = []struct {
	mode fs.FileMode
	bit  uint64
}{{fs.ModeSetuid, 0o4000}, {fs.ModeSetgid, 0o2000}, {fs.ModeSticky, 0o1000}}

func octal(m fs.FileMode) string {
	v := uint64(m.Perm())
	for _, b := range specialBits {
		if m&b.mode != 0 {
			v |= b.bit
		}
	}
	return fmt.Sprintf("%04o", v)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

// etagOf is a strong validator: any write through rename or in place
// changes the mtime (ns), size or inode.
func etagOf(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	b := make([]byte, 0, 48)
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(fi.ModTime().UnixNano()), 16)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(fi.Size()), 16)
	b = append(b, '-')
	b = strconv.AppendUint(b, ino, 16)
	return string(append(b, '"'))
}

// idNames caches uid and gid lookups: listing 100,000 files must not read
// /etc/passwd 100,000 times.
var idNames = struct {
	sync.Mutex
	users, groups map[uint32]string
}{users: map[uint32]string{}, groups: map[uint32]string{}}

// idName is the name of id in names (users or groups), found once by look
// (name reads it from what look found); an id without one is its number.
func idName[T any](names map[uint32]string, id uint32, look func(string) (T, error), name func(T) string) string {
	idNames.Lock()
	defer idNames.Unlock()
	if s, ok := names[id]; ok {
		return s
	}
	s := strconv.FormatUint(uint64(id), 10)
	if found, err := look(s); err == nil {
		s = name(found)
	}
	names[id] = s
	return s
}

// entryOf describes fi (from Lstat) found at root-relative path r.
func (s *Service) entryOf(r string, fi fs.FileInfo) Entry {
	e := Entry{Name: fi.Name(), Path: apiPath(r), Type: kind(fi.Mode()), Size: fi.Size(),
		Mode: octal(fi.Mode()), Perm: fi.Mode().String(), Modified: fi.ModTime().UTC()}
	if r == "." {
		e.Name = "/"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.UID, e.GID = st.Uid, st.Gid
	}
	e.Owner = idName(idNames.users, e.UID, user.LookupId, func(u *user.User) string { return u.Username })
	e.Group = idName(idNames.groups, e.GID, user.LookupGroupId, func(g *user.Group) string { return g.Name })
	switch e.Type {
	case "symlink":
		e.Target, _ = s.root.Readlink(r)
	case "file":
		e.ETag = etagOf(fi)
	}
	return e
}
