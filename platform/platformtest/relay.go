package platformtest

import (
	"io"
	"net"
)

// Relay forwards each connection ln accepts to target, byte for byte in
// both directions (spliced by the kernel), parsing nothing, until ln is
// closed: the least any proxy does, for benchmarks to set beside one.
func Relay(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			d, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer d.Close()
			c.(*net.TCPConn).SetNoDelay(true)
			d.(*net.TCPConn).SetNoDelay(true)
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(c, d)
				_ = c.(*net.TCPConn).CloseWrite()
				close(done)
			}()
			_, _ = io.Copy(d, c)
			_ = d.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}
