//go:build !linux

package journal

// journaldForwarder: systemd-journald exists only on Linux.
func journaldForwarder() func(body, byte) { return nil }
