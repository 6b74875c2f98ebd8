//go:build !linux

package splice

import (
	"io"
	"net"
)

// Copy moves src's bytes to dst until src's end, through a pooled buffer.
func Copy(dst, src net.Conn) (int64, error) { return bufCopy(dst, src) }

// CopyN moves exactly n of src's bytes to dst (io.EOF when src ends
// first, as io.CopyN).
func CopyN(dst, src net.Conn, n int64) (int64, error) {
	w, err := bufCopyN(dst, src, n)
	if err == nil && w < n {
		err = io.EOF
	}
	return w, err
}
