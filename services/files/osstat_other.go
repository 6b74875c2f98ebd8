//go:build !linux

package files

import "io/fs"

// processUmask is the usual mask where the process's cannot be read.
func processUmask() fs.FileMode { return 0o022 }

// changeTime is not read where the stat layout is not known.
func changeTime(fs.FileInfo) int64 { return 0 }
