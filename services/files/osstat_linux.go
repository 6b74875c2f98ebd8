package files

import (
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processUmask is the process's file mode creation mask. Linux shows it in
// /proc/self/status (4.7 and later), which reads it without changing it;
// older kernels only tell by setting it, which is done once, at start.
func processUmask() fs.FileMode {
	if raw, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return fs.FileMode(n) & fs.ModePerm
				}
			}
		}
	}
	old := syscall.Umask(0o022)
	syscall.Umask(old)
	return fs.FileMode(old) & fs.ModePerm
}

// changeTime is fi's status change time (ctime) in nanoseconds: any write
// or chmod moves it and no client can set it, so it tells a rewritten file
// whose size and mtime were put back.
func changeTime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}
