package tunnel

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// socketOwners finds the processes holding the given socket inodes by
// reading /proc/*/fd links ("socket:[123]"). Processes this one may not
// inspect are skipped: their sockets stay without an owner.
func socketOwners(inodes []uint64) map[uint64]owner {
	want := make(map[string]uint64, len(inodes))
	for _, ino := range inodes {
		want["socket:["+strconv.FormatUint(ino, 10)+"]"] = ino
	}
	out := map[uint64]owner{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			ino, ok := want[link]
			if !ok {
				continue
			}
			if _, dup := out[ino]; dup {
				continue // a forked child shares it; the first (lowest pid, the parent) wins
			}
			comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
			out[ino] = owner{pid: pid, program: strings.TrimSpace(string(comm))}
			if len(out) == len(want) {
				return out
			}
		}
	}
	return out
}
