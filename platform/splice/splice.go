// Package splice copies between two connections, the way proxies in the
// agent pass a stream on (the gateway's upgraded connections, the egress
// forwarder): between two TCP sockets on Linux with splice(2) through a
// pipe of its own, so the bytes never enter the process, with raw system
// calls. Every descriptor is non-blocking, so no call waits (the poller
// does), and the runtime need not treat them as calls that may block: the
// standard library's splice does, and a call that moves a megabyte takes
// long enough that the runtime hands the goroutine's P to another thread
// at each one, with sysmon waking to do it, which cost a forwarder more
// CPU than the copy itself.
package splice

import (
	"io"
	"net"
	"sync"
)

var bufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// bufCopy is io.Copy through a pooled buffer.
func bufCopy(dst, src net.Conn) (int64, error) {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	return io.CopyBuffer(dst, src, *b)
}

// bufCopyN copies n bytes through a pooled buffer; fewer end at src's end
// with a nil error (CopyN says io.EOF).
func bufCopyN(dst, src net.Conn, n int64) (int64, error) {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	w, err := io.CopyBuffer(dst, io.LimitReader(src, n), *b)
	return w, err
}
