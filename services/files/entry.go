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

// names caches uid and gid lookups: listing 100,000 files must not read
// /etc/passwd 100,000 times.
type names struct {
	mu     sync.Mutex
	users  map[uint32]string
	groups map[uint32]string
}

var idNames = names{users: map[uint32]string{}, groups: map[uint32]string{}}

func (n *names) user(uid uint32) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.users[uid]; ok {
		return s
	}
	s := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(s); err == nil {
		s = u.Username
	}
	n.users[uid] = s
	return s
}

func (n *names) group(gid uint32) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.groups[gid]; ok {
		return s
	}
	s := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(s); err == nil {
		s = g.Name
	}
	n.groups[gid] = s
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
	e.Owner, e.Group = idNames.user(e.UID), idNames.group(e.GID)
	switch e.Type {
	case "symlink":
		e.Target, _ = s.root.Readlink(r)
	case "file":
		e.ETag = etagOf(fi)
	}
	return e
}
