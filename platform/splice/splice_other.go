//go:build !linux

package splice

import "net"

// Copy moves src's bytes to dst until src's end, through a pooled buffer.
func Copy(dst, src net.Conn) (int64, error) { return bufCopy(dst, src) }
