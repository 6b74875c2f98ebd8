package files

import (
	"os"
	"syscall"
)

// pseudoFS are kernel file systems a recursive watch does not descend into.
var pseudoFS = map[int64]bool{
	0x9fa0:     true, // proc
	0x62656572: true, // sysfs
	0x1cd1:     true, // devpts
	0x27e0eb:   true, // cgroup
	0x63677270: true, // cgroup2
	0x64626720: true, // debugfs
	0x74726163: true, // tracefs
	0x73636673: true, // securityfs
	0xcafe4a11: true, // bpf
}

// isPseudoFS reports whether the open directory d is on one of them.
func isPseudoFS(d *os.File) bool {
	var st syscall.Statfs_t
	return syscall.Fstatfs(int(d.Fd()), &st) == nil && pseudoFS[int64(st.Type)]
}
