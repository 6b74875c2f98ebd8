// Package localtcp tunes TCP connections whose two ends are on this host.
// Congestion control is for networks: on loopback there is no congestion,
// and a pacing controller (bbr, the default on many hosts) only splits a
// bulk sender's writes and arms timers between them. Following 1 GiB of a
// process's output to a client on the same host took about a fifth more
// of the sender's CPU under bbr than under reno (BENCHMARKS.md). A
// connection between two addresses of this host is set to reno, which the
// kernel lets any process choose; every other connection keeps the host's
// choice.
package localtcp

import (
	"context"
	"net"
)

// Listener wraps ln so that every connection it accepts from this host is
// tuned (Tune). The connection itself is answered, not a wrapper, so code
// that needs the socket's type (splice, sendfile) still finds it.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		Tune(c)
	}
	return c, err
}

// DialContext is d's DialContext with each connection to this host tuned
// (Tune): for a client that sends bulk to a local agent (uploads).
func DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			Tune(c)
		}
		return c, err
	}
}
