//go:build !linux

package proxy

import "net"

// alive cannot peek here: a stale connection shows on its first use.
func alive(net.Conn) bool { return true }
